package dev.jdist.algo;

import static dev.jdist.algo.MeshSchedule.Buffer.SCRATCH;
import static dev.jdist.algo.MeshSchedule.Buffer.WORK;

/**
 * Recursive doubling (docs/reference/collectives.md §10.5): {@code log2 m} steps in which each (virtual) rank exchanges everything
 * it has with the rank whose virtual number differs in bit t, after the {@link Fold} for sizes that are not powers of
 * two. Latency-optimal: {@code ceil(log2 n)} rounds (+2 with a fold), at the price of sending the whole vector in each.
 */
public final class RecursiveDoubling {
    private RecursiveDoubling() {}

    /**
     * all_sum/max/min of {@code bytes} bytes (whole elements): WORK is the output, starting as this rank's input.
     * After step t, virtual rank v holds the reduction over the virtual ranks that agree with v above bit t, combined
     * as {@code op(lower block, upper block)}.
     */
    public static MeshSchedule allReduce(int r, int n, long bytes) {
        Fold f = Fold.of(n);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        if (f.foldedOut(r)) {
            b.send(r + 1, WORK, 0, bytes).endStep();
            return b.recv(r + 1, WORK, 0, bytes).build();
        }
        if (f.foldsIn(r)) {
            b.recv(r - 1, SCRATCH, 0, bytes).combine(WORK, 0, SCRATCH, 0, bytes, true).endStep();
        }
        int v = f.virtualOf(r);
        for (int t = 0; t < f.log2m(); t++) {
            int pv = v ^ (1 << t);
            int p = f.realOf(pv);
            b.send(p, WORK, 0, bytes).recv(p, SCRATCH, 0, bytes).combine(WORK, 0, SCRATCH, 0, bytes, pv < v).endStep();
        }
        if (f.foldsIn(r)) b.send(r - 1, WORK, 0, bytes);
        return b.build();
    }

    /**
     * all_gather of {@code bytes} bytes per rank: WORK is the output of {@code n * bytes} bytes with this rank's block
     * already at {@code r * bytes}. In step t virtual rank v sends the blocks of its aligned group of {@code 2^t}
     * virtual ranks (contiguous real blocks) and receives its partner group's.
     */
    public static MeshSchedule allGather(int r, int n, long bytes) {
        Fold f = Fold.of(n);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        if (f.foldedOut(r)) {
            b.send(r + 1, WORK, r * bytes, bytes).endStep();
            // everything but its own block, which it already has
            return b.recv(r + 1, WORK, 0, r * bytes).recv(r + 1, WORK, (r + 1) * bytes, (n - r - 1) * bytes).build();
        }
        if (f.foldsIn(r)) b.recv(r - 1, WORK, (r - 1) * bytes, bytes).endStep();
        int v = f.virtualOf(r);
        for (int t = 0; t < f.log2m(); t++) {
            int width = 1 << t;
            int base = v & ~(width - 1);
            int partnerBase = base ^ width;
            int p = f.realOf(v ^ width);
            long from = f.firstReal(base) * bytes;
            long to = f.firstReal(base + width) * bytes;
            long pFrom = f.firstReal(partnerBase) * bytes;
            long pTo = f.firstReal(partnerBase + width) * bytes;
            b.send(p, WORK, from, to - from).recv(p, WORK, pFrom, pTo - pFrom).endStep();
        }
        if (f.foldsIn(r)) {
            int even = r - 1;
            b.send(even, WORK, 0, even * bytes).send(even, WORK, (even + 1) * bytes, (n - even - 1) * bytes);
        }
        return b.build();
    }
}
