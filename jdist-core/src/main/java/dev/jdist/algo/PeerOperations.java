package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.PeerOp;
import dev.jdist.UnsupportedCollectiveException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The operations MLX lacks (docs/reference/collectives.md §13) over any {@link ScheduleRunner}: turns each call's arrays
 * into a schedule's buffers (this rank's own block copied locally, a batch's sends packed and its receives unpacked),
 * builds the schedule and runs it. The ring's peer mesh and JACCL share it; what differs is the {@link Reach}: every
 * rank connected to every other ({@link PeerSchedules}), or only ring neighbours ({@link NeighbourSchedules}).
 * Arguments have been checked by {@code Group}.
 */
public final class PeerOperations {

    /** Whom a rank reaches directly, which decides the schedules. */
    public enum Reach {
        /** Every other rank (the TCP peer mesh, the JACCL mesh): {@link PeerSchedules}. */
        EVERY_RANK,
        /** Only the two ring neighbours (the JACCL ring): {@link NeighbourSchedules}; batches name neighbours only. */
        NEIGHBOURS
    }

    /**
     * How a rank of a {@link Reach#NEIGHBOURS} group learns every rank's all_to_all_v send sizes, which relaying ranks
     * need: an all-gather of one {@code long} per rank ({@code bytes[s][d]}: what rank s sends rank d).
     */
    @FunctionalInterface
    public interface SendSizes {
        long[][] allGather(long[] mine);
    }

    private final int rank, size;
    private final Reach reach;
    private final ScheduleRunner runner;
    private final SendSizes sendSizes;
    /** What to tell a user whose batch names a rank the group does not reach ({@link Reach#NEIGHBOURS} only). */
    private final String meshHint;

    /**
     * @param sendSizes needed for {@link Reach#NEIGHBOURS} (all_to_all_v); null otherwise
     * @param meshHint  for {@link Reach#NEIGHBOURS}: how to get a group in which every rank reaches every other
     */
    public PeerOperations(int rank, int size, Reach reach, ScheduleRunner runner, SendSizes sendSizes, String meshHint) {
        this.rank = rank;
        this.size = size;
        this.reach = reach;
        this.runner = runner;
        this.sendSizes = sendSizes;
        this.meshHint = meshHint;
    }

    private boolean direct() { return reach == Reach.EVERY_RANK; }

    public void broadcast(Array buffer, int root) {
        long bytes = buffer.nbytes();
        runner.run("broadcast from rank " + root + (direct() ? " (binomial tree)" : " (chains along the ring)"),
                direct() ? PeerSchedules.broadcast(rank, size, root, bytes) : NeighbourSchedules.broadcast(rank, size, root, bytes),
                buffer.segment(), null);
    }

    /** all_to_all of {@code size} equal blocks: every rank's sizes are known without asking. */
    public void allToAll(Array in, Array out) {
        long[] counts = new long[size];
        java.util.Arrays.fill(counts, out.size() / size);
        allToAll(in, counts, out, counts.clone(), true);
    }

    public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        allToAll(in, sendCounts, out, recvCounts, false);
    }

    private void allToAll(Array in, long[] sendCounts, Array out, long[] recvCounts, boolean equal) {
        int s = in.dtype().itemSize();
        long[] sb = new long[size], rb = new long[size];
        for (int q = 0; q < size; q++) {
            sb[q] = sendCounts[q] * s;
            rb[q] = recvCounts[q] * s;
        }
        long[] so = PeerSchedules.offsets(sb), ro = PeerSchedules.offsets(rb);
        MemorySegment.copy(in.segment(), so[rank], out.segment(), ro[rank], sb[rank]);
        MeshSchedule schedule;
        if (direct()) {
            schedule = PeerSchedules.allToAll(rank, size, sb, rb);
        } else {
            long[][] matrix;
            if (equal) {
                matrix = new long[size][];
                for (int q = 0; q < size; q++) matrix[q] = sb;
            } else {
                matrix = sendSizes.allGather(sb);
            }
            schedule = NeighbourSchedules.allToAll(rank, size, matrix);
        }
        runner.run(direct() ? "all_to_all (direct)" : "all_to_all (store and forward along the ring)", schedule,
                out.segment(), in.segment());
    }

    public void gather(Array in, Array out, int root) {
        long bytes = in.nbytes();
        MeshSchedule schedule = direct() ? PeerSchedules.gather(rank, size, root, bytes) : NeighbourSchedules.gather(rank, size, root, bytes);
        String name = "gather to rank " + root + (direct() ? " (direct)" : " (relayed along the ring)");
        if (rank == root) {
            MemorySegment.copy(in.segment(), 0, out.segment(), rank * bytes, bytes);
            runner.run(name, schedule, out.segment(), null);
        } else {
            runner.run(name, schedule, in.segment(), null);
        }
    }

    public void scatter(Array in, Array out, int root) {
        long bytes = out.nbytes();
        MeshSchedule schedule = direct() ? PeerSchedules.scatter(rank, size, root, bytes) : NeighbourSchedules.scatter(rank, size, root, bytes);
        String name = "scatter from rank " + root + (direct() ? " (direct)" : " (relayed along the ring)");
        if (rank == root) {
            MemorySegment.copy(in.segment(), rank * bytes, out.segment(), 0, bytes);
            runner.run(name, schedule, in.segment(), null);
        } else {
            runner.run(name, schedule, out.segment(), null);
        }
    }

    /** A single send as a batch of one, so that it shares the per-pair order with batches (§13.6). */
    public void send(Array x, int dst) {
        checkReached(dst, "send to");
        runner.run("send to rank " + dst + " (direct)", PeerSchedules.batch(List.of(new PeerSchedules.Transfer(dst, true, x.nbytes()))),
                null, x.segment());
    }

    public void recv(Array out, int src) {
        checkReached(src, "receive from");
        runner.run("recv from rank " + src + " (direct)", PeerSchedules.batch(List.of(new PeerSchedules.Transfer(src, false, out.nbytes()))),
                out.segment(), null);
    }

    /**
     * One step holding every transfer (no order can deadlock). Several sends are packed into one input buffer and
     * several receives land in one work buffer, then are copied out; a lone send or receive uses its array directly.
     */
    public void batchSendRecv(List<PeerOp> ops) {
        for (PeerOp op : ops) checkReached(op.peer(), op.isSend() ? "send to" : "receive from");
        List<PeerSchedules.Transfer> transfers = new ArrayList<>(ops.size());
        List<Array> sends = new ArrayList<>(), recvs = new ArrayList<>();
        long sendBytes = 0, recvBytes = 0;
        for (PeerOp op : ops) {
            transfers.add(new PeerSchedules.Transfer(op.peer(), op.isSend(), op.array().nbytes()));
            if (op.isSend()) {
                sends.add(op.array());
                sendBytes += op.array().nbytes();
            } else {
                recvs.add(op.array());
                recvBytes += op.array().nbytes();
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment input = sends.size() == 1 ? sends.getFirst().segment() : pack(arena, sends, sendBytes);
            MemorySegment work = recvs.size() == 1 ? recvs.getFirst().segment() : arena.allocate(Math.max(1, recvBytes), 16);
            runner.run("batch of " + ops.size() + " send/recv (direct)", PeerSchedules.batch(transfers), work, input);
            if (recvs.size() > 1) {
                long o = 0;
                for (Array r : recvs) {
                    MemorySegment.copy(work, o, r.segment(), 0, r.nbytes());
                    o += r.nbytes();
                }
            }
        }
    }

    /** On a ring of neighbours, a transfer to any other rank is refused before anything moves (MLX's ring rule). */
    private void checkReached(int peer, String what) {
        if (direct() || NeighbourSchedules.isNeighbour(rank, size, peer)) return;
        int left = Math.floorMod(rank - 1, size), right = (rank + 1) % size;
        throw new UnsupportedCollectiveException("rank " + rank + " cannot " + what + " rank " + peer + ": on a ring a rank reaches "
                + "only its neighbours, ranks " + left + " (left) and " + right + " (right) of " + size + "; " + meshHint);
    }

    private static MemorySegment pack(Arena arena, List<Array> arrays, long bytes) {
        MemorySegment p = arena.allocate(Math.max(1, bytes), 16);
        long o = 0;
        for (Array a : arrays) {
            MemorySegment.copy(a.segment(), 0, p, o, a.nbytes());
            o += a.nbytes();
        }
        return p;
    }
}
