package dev.jdist.algo;

import static dev.jdist.algo.MeshSchedule.Buffer.SCRATCH;
import static dev.jdist.algo.MeshSchedule.Buffer.WORK;

/**
 * sum_scatter by recursive halving (docs/reference/collectives.md §10.7), over the {@link Fold}'s {@code m} virtual ranks. Virtual
 * chunk v is the real chunks of the ranks virtual rank v stands for (contiguous). In step t virtual rank v keeps the
 * virtual chunks whose bit t equals its own and sends the others of its set to its partner {@code v ^ 2^t}, so after
 * step t it holds the chunks {@code j ≡ v (mod 2^(t+1))} and at the end its own. The combines are those of
 * {@link RecursiveDoubling#allReduce}, chunk by chunk.
 */
public final class RecursiveHalving {
    private RecursiveHalving() {}

    /**
     * sum_scatter of {@code n} chunks of {@code chunkBytes} bytes each: WORK is a copy of the input ({@code n *
     * chunkBytes}); at the end, this rank's result is {@code WORK[r * chunkBytes, +chunkBytes)}.
     */
    public static MeshSchedule sumScatter(int r, int n, long chunkBytes) {
        Fold f = Fold.of(n);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        long total = n * chunkBytes;
        if (chunkBytes == 0) return b.build();
        if (f.foldedOut(r)) {
            b.send(r + 1, WORK, 0, total).endStep();
            return b.recv(r + 1, WORK, r * chunkBytes, chunkBytes).build();
        }
        if (f.foldsIn(r)) b.recv(r - 1, SCRATCH, 0, total).combine(WORK, 0, SCRATCH, 0, total, true).endStep();
        int v = f.virtualOf(r);
        int m = f.m();
        for (int t = 0; t < f.log2m(); t++) {
            int stride = 1 << t;
            int bit = (v >> t) & 1;
            int p = f.realOf(v ^ stride);
            boolean partnerIsLeft = bit == 1;
            long off = 0;
            for (int j = v & (stride - 1); j < m; j += stride) {   // the virtual chunks v holds: j ≡ v (mod 2^t)
                long from = f.firstReal(j) * chunkBytes;
                long len = f.firstReal(j + 1) * chunkBytes - from;
                if (((j >> t) & 1) != bit) {
                    b.send(p, WORK, from, len);
                } else {
                    b.recv(p, SCRATCH, off, len).combine(WORK, from, SCRATCH, off, len, partnerIsLeft);
                    off += len;
                }
            }
            b.endStep();
        }
        if (f.foldsIn(r)) b.send(r - 1, WORK, (r - 1) * chunkBytes, chunkBytes);
        return b.build();
    }
}
