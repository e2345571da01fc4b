package dev.jdist.nn;

import dev.jdist.Array;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * MLX's rule for cutting a parameter between ranks ({@code nn.layers.distributed._shard}): cut
 * the axis into segments, cut each segment into {@code n} equal parts, keep part {@code r} of
 * every segment, concatenated in order.
 */
final class Sharding {
    private Sharding() {}

    /** Segment boundaries {@code [0, b1, ..., length]} for {@code segments} equal segments. */
    static int[] equalSegments(int length, int segments, String what) {
        if (segments < 1) throw new IllegalArgumentException("segments must be >= 1, got " + segments);
        if (length % segments != 0) {
            throw new IllegalArgumentException(what + " has " + length + " entries, which do not divide into " + segments
                    + " equal segments; pass a number of segments that divides " + length + ", or explicit split points");
        }
        int[] b = new int[segments + 1];
        for (int i = 0; i <= segments; i++) b[i] = i * (length / segments);
        return b;
    }

    /** Segment boundaries from split indices (MLX: a list of ints). */
    static int[] splitIndices(int length, int[] indices, String what) {
        int[] b = new int[indices.length + 2];
        b[0] = 0;
        for (int i = 0; i < indices.length; i++) b[i + 1] = indices[i];
        b[b.length - 1] = length;
        for (int i = 1; i < b.length; i++) {
            if (b[i] < b[i - 1] || b[i] > length) {
                throw new IllegalArgumentException("split points " + Arrays.toString(indices) + " for " + what + " of "
                        + length + " entries must be ascending and within 0.." + length);
            }
        }
        return b;
    }

    /** Segment boundaries from fractions of the axis (MLX: a list of floats, each index {@code int(f·length)}). */
    static int[] splitFractions(int length, double[] fractions, String what) {
        int[] idx = new int[fractions.length];
        for (int i = 0; i < fractions.length; i++) {
            if (!(fractions[i] >= 0 && fractions[i] <= 1)) {
                throw new IllegalArgumentException("split fractions " + Arrays.toString(fractions) + " for " + what
                        + " must lie in [0, 1]");
            }
            idx[i] = (int) (fractions[i] * length);
        }
        return splitIndices(length, idx, what);
    }

    /** Rank {@code r}'s shard of {@code a} along {@code axis}: part r of n of every segment. */
    static Array shard(Array a, int axis, int[] boundaries, int n, int r, String what) {
        int[] shape = a.shape();
        if (shape[axis] != boundaries[boundaries.length - 1]) {
            throw new IllegalArgumentException("internal: boundaries do not cover axis " + axis + " of " + what);
        }
        List<int[]> keep = new ArrayList<>();     // [start, length] along the axis, in order
        int kept = 0;
        for (int s = 0; s + 1 < boundaries.length; s++) {
            int len = boundaries[s + 1] - boundaries[s];
            if (len % n != 0) {
                throw new IllegalArgumentException(what + ": segment " + s + " has " + len + " entries along axis " + axis
                        + ", which do not divide among " + n + " ranks; use a group size that divides every segment "
                        + "(segment boundaries " + Arrays.toString(boundaries) + ")");
            }
            int part = len / n;
            keep.add(new int[] {boundaries[s] + r * part, part});
            kept += part;
        }
        long outer = 1;
        for (int i = 0; i < axis; i++) outer *= shape[i];
        long inner = a.dtype().itemSize();
        for (int i = axis + 1; i < shape.length; i++) inner *= shape[i];
        int[] outShape = shape.clone();
        outShape[axis] = kept;
        Array out = Array.zeros(a.dtype(), outShape);
        MemorySegment src = a.segment();
        MemorySegment dst = out.segment();
        long dstOff = 0;
        for (long o = 0; o < outer; o++) {
            long rowBase = o * shape[axis] * inner;
            for (int[] k : keep) {
                long bytes = k[1] * inner;
                MemorySegment.copy(src, rowBase + k[0] * inner, dst, dstOff, bytes);
                dstOff += bytes;
            }
        }
        return out;
    }
}
