package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Group;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * SGD with momentum whose optimizer state is sharded over a data-parallel group (ZeRO stage 1): every rank keeps the
 * momentum of one {@code 1/size()} slice of the parameters only. One {@link #step}:
 * <ol>
 *   <li>the gradients, flattened in order into one float32 vector (padded to a multiple of the group size), are
 *       reduce-scattered with {@link Group#sumScatter}: rank r gets the sum of every rank's slice r;</li>
 *   <li>rank r averages its slice and updates it: {@code v := μ·v + g}, {@code p := p − lr·v};</li>
 *   <li>the updated slices are all-gathered ({@link Group#allGather}) into every rank's parameters.</li>
 * </ol>
 * The same bytes cross the network as averaging the gradients with one all_sum (a sum_scatter and an all_gather are its
 * two halves), while the optimizer's state and work shrink by the group size. Every rank ends a step with the same
 * parameters, bit for bit, as long as they started equal ({@link Parameters#broadcast}).
 */
public final class ShardedSgd {
    private final Group group;
    private final float learningRate;
    private final float momentum;
    private float[] velocity;   // this rank's slice only
    private long elements = -1;

    /** @param momentum μ in [0, 1); 0 is plain SGD */
    public ShardedSgd(Group group, float learningRate, float momentum) {
        if (!(learningRate > 0f) || Float.isInfinite(learningRate)) {
            throw new IllegalArgumentException("the learning rate must be a positive finite number, got " + learningRate);
        }
        if (!(momentum >= 0f && momentum < 1f)) throw new IllegalArgumentException("momentum must be in [0, 1), got " + momentum);
        this.group = group;
        this.learningRate = learningRate;
        this.momentum = momentum;
    }

    /** Elements of the optimizer state this rank holds (its slice of the flattened parameters). */
    public int stateElements() { return velocity == null ? 0 : velocity.length; }

    /**
     * One optimizer step on every rank of the group (a collective: every rank calls it with parameters and gradients of
     * the same shapes, in the same order). {@code gradients} are this rank's own (not averaged); the parameters are
     * updated in place.
     */
    public void step(List<Array> parameters, List<Array> gradients) {
        if (parameters.size() != gradients.size()) {
            throw new IllegalArgumentException(parameters.size() + " parameters but " + gradients.size()
                    + " gradients; pass one gradient per parameter, in the same order");
        }
        long total = 0;
        for (int i = 0; i < parameters.size(); i++) {
            Floats.requireFloat32(parameters.get(i), "parameter");
            Floats.requireFloat32(gradients.get(i), "gradient");
            if (parameters.get(i).size() != gradients.get(i).size()) {
                throw new IllegalArgumentException("parameter " + i + " has " + parameters.get(i).size() + " elements but its "
                        + "gradient has " + gradients.get(i).size());
            }
            total += parameters.get(i).size();
        }
        if (elements >= 0 && elements != total) {
            throw new IllegalArgumentException("this optimizer's state is for " + elements + " parameter elements, got " + total
                    + "; use one ShardedSgd per set of parameters");
        }
        int n = group.size();
        int shard = Math.toIntExact((total + n - 1) / n);
        if (velocity == null) velocity = new float[shard];
        elements = total;

        Array flatGrads = flatten(gradients, (long) shard * n);
        float[] g = group.sumScatter(flatGrads).toFloatArray();
        float[] p = flatten(parameters, (long) shard * n).toFloatArray();
        int from = group.rank() * shard;
        float scale = 1f / n;
        for (int i = 0; i < shard; i++) {
            velocity[i] = momentum * velocity[i] + g[i] * scale;
            p[from + i] -= learningRate * velocity[i];
        }
        Array mine = Array.fromFloats(java.util.Arrays.copyOfRange(p, from, from + shard), shard);
        MemorySegment all = group.allGather(mine).segment();
        long o = 0;
        for (Array a : parameters) {
            MemorySegment.copy(all, o, a.segment(), 0, a.nbytes());
            o += a.nbytes();
        }
    }

    /** The arrays one after the other in one float32 vector of {@code length} elements (zeros after them). */
    private static Array flatten(List<Array> arrays, long length) {
        Array flat = Array.zeros(DType.FLOAT32, Math.toIntExact(length));
        long o = 0;
        for (Array a : arrays) {
            MemorySegment.copy(a.segment(), 0, flat.segment(), o, a.nbytes());
            o += a.nbytes();
        }
        return flat;
    }
}
