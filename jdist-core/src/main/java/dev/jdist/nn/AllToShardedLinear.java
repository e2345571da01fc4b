package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.Distributed;
import dev.jdist.Group;

import java.util.List;
import java.util.Random;

/**
 * The first half of a tensor-parallel block (MLX {@code nn.AllToShardedLinear}): every rank gets
 * the whole input and computes its own slice of the output features, with no communication in
 * the forward pass. Rank {@code r} of {@code N} holds rows {@code [r·out/N, (r+1)·out/N)} of the
 * full weight ({@code [out/N, in]}) and the matching bias entries ({@code [out/N]}).
 *
 * <p>In the backward pass the input gradient is summed over the group ({@link #backward}).
 */
public final class AllToShardedLinear {
    private final Linear shard;
    private final Group group;
    private final int fullOut;

    private AllToShardedLinear(Linear shard, int fullOut, Group group) {
        this.shard = shard;
        this.fullOut = fullOut;
        this.group = group;
    }

    /**
     * A freshly initialised shard of an {@code in → out} layer: this rank's {@code out/N} rows,
     * uniform in {@code [-1/√in, 1/√in)} from {@code rng}.
     */
    public AllToShardedLinear(int in, int out, boolean bias, Group group, Random rng) {
        this(init(in, out, bias, orInit(group), rng), out, orInit(group));
    }

    private static Linear init(int in, int out, boolean bias, Group g, Random rng) {
        requireDivisible(out, g.size());
        return Linear.random(in, out / g.size(), bias, rng);   // fan-in is not sharded: same scale as the full layer
    }

    /** This rank's shard of {@code full}, cutting the output features into {@code N} equal parts. */
    public static AllToShardedLinear fromLinear(Linear full, Group group) {
        return fromLinear(full, 1, group);
    }

    /**
     * This rank's shard of {@code full} when the output features are {@code segments} stacked
     * projections (e.g. 3 for a fused QKV): each segment is cut into {@code N} parts and rank r
     * keeps part r of each, concatenated in order.
     */
    public static AllToShardedLinear fromLinear(Linear full, int segments, Group group) {
        return cut(full, Sharding.equalSegments(full.outputDims(), segments, "the output features of " + full), orInit(group));
    }

    /** As {@link #fromLinear(Linear, int, Group)} with explicit split points (output-feature indices). */
    public static AllToShardedLinear fromLinear(Linear full, int[] splitPoints, Group group) {
        return cut(full, Sharding.splitIndices(full.outputDims(), splitPoints, "the output features of " + full), orInit(group));
    }

    /** As {@link #fromLinear(Linear, int, Group)} with split points given as fractions of the output features. */
    public static AllToShardedLinear fromLinear(Linear full, double[] splitFractions, Group group) {
        return cut(full, Sharding.splitFractions(full.outputDims(), splitFractions, "the output features of " + full), orInit(group));
    }

    private static AllToShardedLinear cut(Linear full, int[] boundaries, Group g) {
        String what = "AllToShardedLinear from " + full;
        Array w = Sharding.shard(full.weight(), 0, boundaries, g.size(), g.rank(), what);
        Array b = full.bias() == null ? null : Sharding.shard(full.bias(), 0, boundaries, g.size(), g.rank(), what);
        return new AllToShardedLinear(new Linear(w, b), full.outputDims(), g);
    }

    /** {@code x·W_rᵀ + b_r}: {@code x} is {@code [..., in]} (the same on every rank), the result {@code [..., out/N]}. */
    public Array forward(Array x) {
        return shard.forward(x);
    }

    /**
     * Gradients for this rank's output slice gradient {@code dy} ({@code [..., out/N]}): the shard's
     * weight and bias gradients, and the full input gradient {@code all_sum(dy_r·W_r)} (one
     * collective, issued by every rank).
     */
    public Linear.Grads backward(Array x, Array dy) {
        Linear.Grads local = shard.backward(x, dy);
        return new Linear.Grads(local.weight(), local.bias(), group.allSum(local.input()));
    }

    /** This rank's part of the layer, as a plain {@link Linear} ({@code out/N → in}). */
    public Linear shard() { return shard; }

    public List<Array> parameters() { return shard.parameters(); }

    public int inputDims() { return shard.inputDims(); }

    /** The full layer's output features (this rank produces {@code outputDims() / N} of them). */
    public int outputDims() { return fullOut; }

    public Group group() { return group; }

    @Override
    public String toString() {
        return "AllToShardedLinear(input_dims=" + inputDims() + ", output_dims=" + fullOut + ", bias=" + (shard.bias() != null)
                + ", rank " + group.rank() + " of " + group.size() + ")";
    }

    static Group orInit(Group g) { return g == null ? Distributed.init() : g; }

    private static void requireDivisible(int out, int n) {
        if (out % n != 0) {
            throw new IllegalArgumentException("AllToShardedLinear needs output features divisible by the group size: " + out
                    + " % " + n + " != 0; choose an output size that is a multiple of " + n);
        }
    }
}
