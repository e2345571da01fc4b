package dev.jdist.algo;

import java.util.ArrayList;
import java.util.List;

import static dev.jdist.algo.MeshSchedule.Buffer.SCRATCH;
import static dev.jdist.algo.MeshSchedule.Buffer.WORK;

/**
 * Rabenseifner's all-reduce (docs/reference/collectives.md §10.6): a reduce-scatter by recursive halving, then an all-gather by
 * recursive doubling, over the {@link Fold}'s {@code m} virtual ranks; the vector is cut into {@code m} segments as the
 * ring cuts a part (§3.6.3 with {@code m} for {@code n}). Each rank sends about {@code 2N} bytes in {@code 2 log2 m}
 * rounds: latency of recursive doubling, bandwidth close to the ring's. The combines are those of
 * {@link RecursiveDoubling#allReduce}, segment by segment, so the two give the same bytes.
 */
public final class HalvingDoubling {
    private HalvingDoubling() {}

    /** all_sum/max/min of {@code elements} elements of {@code itemSize} bytes; WORK is the output, starting as the input. */
    public static MeshSchedule allReduce(int r, int n, long elements, int itemSize) {
        Fold f = Fold.of(n);
        long bytes = elements * itemSize;
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        if (f.foldedOut(r)) {
            b.send(r + 1, WORK, 0, bytes).endStep();
            return b.recv(r + 1, WORK, 0, bytes).build();
        }
        if (f.foldsIn(r)) b.recv(r - 1, SCRATCH, 0, bytes).combine(WORK, 0, SCRATCH, 0, bytes, true).endStep();
        int v = f.virtualOf(r);
        int m = f.m();
        long seg = Math.ceilDiv(elements, (long) m);
        int lo = 0;
        int hi = m;
        List<int[]> kept = new ArrayList<>();   // [lo, hi) of the segments kept at step t
        for (int t = 0; t < f.log2m(); t++) {
            int mid = (lo + hi) >>> 1;
            boolean upper = ((v >> t) & 1) == 1;
            int keepLo = upper ? mid : lo;
            int keepHi = upper ? hi : mid;
            int giveLo = upper ? lo : mid;
            int giveHi = upper ? mid : hi;
            int p = f.realOf(v ^ (1 << t));
            long keepFrom = start(keepLo, seg, elements) * itemSize;
            long keepBytes = start(keepHi, seg, elements) * itemSize - keepFrom;
            long giveFrom = start(giveLo, seg, elements) * itemSize;
            long giveBytes = start(giveHi, seg, elements) * itemSize - giveFrom;
            b.send(p, WORK, giveFrom, giveBytes).recv(p, SCRATCH, 0, keepBytes)
                    .combine(WORK, keepFrom, SCRATCH, 0, keepBytes, upper).endStep();
            kept.add(new int[] {keepLo, keepHi, giveLo, giveHi});
            lo = keepLo;
            hi = keepHi;
        }
        for (int t = f.log2m() - 1; t >= 0; t--) {
            int[] k = kept.get(t);
            int p = f.realOf(v ^ (1 << t));
            long keepFrom = start(k[0], seg, elements) * itemSize;
            long keepBytes = start(k[1], seg, elements) * itemSize - keepFrom;
            long giveFrom = start(k[2], seg, elements) * itemSize;
            long giveBytes = start(k[3], seg, elements) * itemSize - giveFrom;
            b.send(p, WORK, keepFrom, keepBytes).recv(p, WORK, giveFrom, giveBytes).endStep();
        }
        if (f.foldsIn(r)) b.send(r - 1, WORK, 0, bytes);
        return b.build();
    }

    /** First element of segment j: {@code min(j * seg, E)}. */
    private static long start(int j, long seg, long elements) { return Math.min(j * seg, elements); }
}
