package dev.jdist.algo;

import static dev.jdist.algo.MeshSchedule.Buffer.WORK;

/**
 * Bruck's all-gather (docs/reference/collectives.md §10.8): {@code ceil(log2 n)} rounds for any n, no fold. Before round k rank r
 * holds the blocks {@code r, r+1, ..., r+2^k-1} (mod n); it sends the first {@code min(2^k, n-2^k)} of them to rank
 * {@code r - 2^k} and receives as many from rank {@code r + 2^k}, each straight into its place in the output (no final
 * rotation). A run of blocks that wraps past block n-1 is two messages.
 */
public final class Bruck {
    private Bruck() {}

    /** all_gather of {@code bytes} bytes per rank: WORK is the output of {@code n * bytes}, this rank's block in place. */
    public static MeshSchedule allGather(int r, int n, long bytes) {
        if (n < 2) throw new IllegalArgumentException("a group of " + n + " rank(s) needs no algorithm");
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        for (int dist = 1; dist < n; dist <<= 1) {
            int count = Math.min(dist, n - dist);
            int to = Math.floorMod(r - dist, n);
            int from = (r + dist) % n;
            blocks(b, true, to, r, count, n, bytes);
            blocks(b, false, from, (r + dist) % n, count, n, bytes);
            b.endStep();
        }
        return b.build();
    }

    /** Blocks {@code first, first+1, ..., first+count-1} (mod n) as at most two contiguous messages. */
    private static void blocks(MeshSchedule.Builder b, boolean send, int peer, int first, int count, int n, long bytes) {
        int head = Math.min(count, n - first);
        if (send) {
            b.send(peer, WORK, first * bytes, head * bytes).send(peer, WORK, 0, (count - head) * bytes);
        } else {
            b.recv(peer, WORK, first * bytes, head * bytes).recv(peer, WORK, 0, (count - head) * bytes);
        }
    }
}
