package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.Group;

import java.util.List;
import java.util.Random;

/**
 * The second half of a tensor-parallel block (MLX {@code nn.ShardedToAllLinear}): each rank holds
 * a slice of the input features and the matching column block of the weight ({@code [out, in/N]},
 * columns {@code [r·in/N, (r+1)·in/N)}) plus the whole bias. Forward:
 * {@code y = all_sum(x_r·W_rᵀ) + b} — one {@code all_sum}, and every rank gets the full output.
 */
public final class ShardedToAllLinear {
    private final Linear shard;     // weight [out, in/N], bias [out] (whole)
    private final Group group;
    private final int fullIn;

    private ShardedToAllLinear(Linear shard, int fullIn, Group group) {
        this.shard = shard;
        this.fullIn = fullIn;
        this.group = group;
    }

    /**
     * A freshly initialised shard of an {@code in → out} layer: this rank's {@code in/N} columns,
     * uniform in {@code [-1/√in, 1/√in)} from {@code rng} (the full fan-in, as MLX).
     */
    public ShardedToAllLinear(int in, int out, boolean bias, Group group, Random rng) {
        this(init(in, out, bias, AllToShardedLinear.orInit(group), rng), in, AllToShardedLinear.orInit(group));
    }

    private static Linear init(int in, int out, boolean bias, Group g, Random rng) {
        if (in % g.size() != 0) {
            throw new IllegalArgumentException("ShardedToAllLinear needs input features divisible by the group size: " + in
                    + " % " + g.size() + " != 0; choose an input size that is a multiple of " + g.size());
        }
        float scale = (float) Math.sqrt(1.0 / in);
        int cols = in / g.size();
        float[] w = new float[Math.multiplyExact(out, cols)];
        for (int i = 0; i < w.length; i++) w[i] = (rng.nextFloat() * 2f - 1f) * scale;
        float[] b = null;
        if (bias) {
            b = new float[out];
            for (int i = 0; i < out; i++) b[i] = (rng.nextFloat() * 2f - 1f) * scale;
        }
        return new Linear(Array.fromFloats(w, out, cols), b == null ? null : Array.fromFloats(b, out));
    }

    /** This rank's shard of {@code full}, cutting the input features into {@code N} equal parts. */
    public static ShardedToAllLinear fromLinear(Linear full, Group group) {
        return fromLinear(full, 1, group);
    }

    /** As {@link #fromLinear(Linear, Group)} with the input features made of {@code segments} stacked parts. */
    public static ShardedToAllLinear fromLinear(Linear full, int segments, Group group) {
        return cut(full, Sharding.equalSegments(full.inputDims(), segments, "the input features of " + full),
                AllToShardedLinear.orInit(group));
    }

    /** As {@link #fromLinear(Linear, int, Group)} with explicit split points (input-feature indices). */
    public static ShardedToAllLinear fromLinear(Linear full, int[] splitPoints, Group group) {
        return cut(full, Sharding.splitIndices(full.inputDims(), splitPoints, "the input features of " + full),
                AllToShardedLinear.orInit(group));
    }

    /** As {@link #fromLinear(Linear, int, Group)} with split points given as fractions of the input features. */
    public static ShardedToAllLinear fromLinear(Linear full, double[] splitFractions, Group group) {
        return cut(full, Sharding.splitFractions(full.inputDims(), splitFractions, "the input features of " + full),
                AllToShardedLinear.orInit(group));
    }

    private static ShardedToAllLinear cut(Linear full, int[] boundaries, Group g) {
        Array w = Sharding.shard(full.weight(), 1, boundaries, g.size(), g.rank(), "ShardedToAllLinear from " + full);
        Array b = full.bias() == null ? null : full.bias().copy();
        return new ShardedToAllLinear(new Linear(w, b), full.inputDims(), g);
    }

    /**
     * {@code all_sum(x_r·W_rᵀ) + b} for this rank's input slice {@code x_r} ({@code [..., in/N]});
     * returns the full output {@code [..., out]} on every rank. Every rank must call it.
     */
    public Array forward(Array x) {
        int out = shard.outputDims();
        float[] partial = shard.forward(x, false);
        Array summed = group.allSum(Array.fromFloats(partial, Floats.withLastDim(x, out)));
        if (shard.bias() == null) return summed;
        float[] y = Floats.read(summed, "all_sum result");
        float[] b = Floats.read(shard.bias(), "bias");
        for (int i = 0; i < y.length; i += out) MatrixKernels.axpy(1f, b, 0, y, i, out);
        return Floats.array(y, summed.shape());
    }

    /**
     * Gradients for the full output gradient {@code dy} ({@code [..., out]}, the same on every
     * rank) at this rank's input slice {@code x}: the shard's weight gradient, the bias gradient and
     * this rank's slice of the input gradient. No communication (the vjp of {@code all_sum} is the
     * identity).
     */
    public Linear.Grads backward(Array x, Array dy) {
        return shard.backward(x, dy);
    }

    /** This rank's part of the layer as a plain {@link Linear} ({@code in/N → out}, whole bias). */
    public Linear shard() { return shard; }

    public List<Array> parameters() { return shard.parameters(); }

    /** The full layer's input features (this rank takes {@code inputDims() / N} of them). */
    public int inputDims() { return fullIn; }

    public int outputDims() { return shard.outputDims(); }

    public Group group() { return group; }

    @Override
    public String toString() {
        return "ShardedToAllLinear(input_dims=" + fullIn + ", output_dims=" + outputDims() + ", bias=" + (shard.bias() != null)
                + ", rank " + group.rank() + " of " + group.size() + ")";
    }
}
