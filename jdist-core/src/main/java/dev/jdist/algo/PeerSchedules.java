package dev.jdist.algo;

import dev.jdist.algo.MeshSchedule.Buffer;

import java.util.List;

/**
 * The mesh schedules of the operations that move data without reducing it (docs/reference/collectives.md §13):
 * broadcast, all_to_all(v), gather, scatter, and point-to-point transfers alone or in batches. Pure functions of the
 * operation's arguments, like {@link MeshAlgorithms}; every rank derives the same message lengths from them, and the
 * in-memory simulator checks that they complete without buffering between ranks.
 *
 * <p>Byte counts, not elements: callers multiply by the item size. A rank's own block never travels (the caller copies
 * it, since only it knows whether input and output are one buffer).
 */
public final class PeerSchedules {
    private PeerSchedules() {}

    /**
     * Binomial-tree broadcast of {@code WORK[0, bytes)} from {@code root}: in round k the ranks that have the data
     * (relative ranks below 2^k) send it to the relative rank 2^k higher, so it reaches all n ranks in ⌈log2 n⌉ rounds
     * and the root sends ⌈log2 n⌉ times, not n−1.
     */
    public static MeshSchedule broadcast(int rank, int size, int root, long bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        int v = Math.floorMod(rank - root, size);
        for (int mask = 1; mask < size; mask <<= 1) {
            if (v < mask && v + mask < size) b.send((v + mask + root) % size, Buffer.WORK, 0, bytes);
            else if (v >= mask && v < 2 * mask) b.recv((v - mask + root) % size, Buffer.WORK, 0, bytes);
            b.endStep();
        }
        return b.build();
    }

    /**
     * all_to_all with blocks of any size, in one step (every pair exchanges at once): {@code INPUT[sendOffsets[q], +
     * sendBytes[q])} goes to rank q and {@code WORK[recvOffsets[q], + recvBytes[q])} comes from it. Peers are visited
     * from this rank upward (rank+1, rank+2, …), so that no rank is every rank's first peer.
     */
    public static MeshSchedule allToAll(int rank, int size, long[] sendBytes, long[] recvBytes) {
        long[] so = offsets(sendBytes), ro = offsets(recvBytes);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        for (int i = 1; i < size; i++) {
            int to = (rank + i) % size, from = Math.floorMod(rank - i, size);
            b.send(to, Buffer.INPUT, so[to], sendBytes[to]);
            b.recv(from, Buffer.WORK, ro[from], recvBytes[from]);
        }
        return b.build();
    }

    /** Gather to {@code root} in one step: the root receives rank q's {@code bytes} into {@code WORK} block q; the others send {@code WORK[0, bytes)}. */
    public static MeshSchedule gather(int rank, int size, int root, long bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (rank == root) {
            for (int q = 0; q < size; q++) if (q != root) b.recv(q, Buffer.WORK, q * bytes, bytes);
        } else {
            b.send(root, Buffer.WORK, 0, bytes);
        }
        return b.build();
    }

    /** Scatter from {@code root} in one step: the root sends {@code WORK} block q to rank q; the others receive into {@code WORK[0, bytes)}. */
    public static MeshSchedule scatter(int rank, int size, int root, long bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (rank == root) {
            for (int q = 0; q < size; q++) if (q != root) b.send(q, Buffer.WORK, q * bytes, bytes);
        } else {
            b.recv(root, Buffer.WORK, 0, bytes);
        }
        return b.build();
    }

    /** One transfer of a batch: {@code bytes} to ({@code send}) or from {@code peer}. */
    public record Transfer(int peer, boolean send, long bytes) {}

    /**
     * A batch of transfers as one step, so that every one progresses at once and no order of the batch can deadlock:
     * sends read {@code INPUT} and receives write {@code WORK}, each laid back to back in the batch's order (the
     * caller packs and unpacks). Two transfers to one peer go in the order listed, as the mesh keeps one byte stream
     * per direction of each pair. A single send or recv is a batch of one.
     */
    public static MeshSchedule batch(List<Transfer> transfers) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        long in = 0, out = 0;
        for (Transfer t : transfers) {
            if (t.send()) {
                b.send(t.peer(), Buffer.INPUT, in, t.bytes());
                in += t.bytes();
            } else {
                b.recv(t.peer(), Buffer.WORK, out, t.bytes());
                out += t.bytes();
            }
        }
        return b.build();
    }

    /** Where blocks of {@code bytes} begin when laid back to back. */
    public static long[] offsets(long[] bytes) {
        long[] o = new long[bytes.length];
        for (int q = 1; q < bytes.length; q++) o[q] = o[q - 1] + bytes[q - 1];
        return o;
    }
}
