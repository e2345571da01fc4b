package dev.jdist.mpi;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.Liveness;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.LongFunction;

/**
 * A group over one MPI communicator (docs/reference/collectives.md §5.3): {@code MPI_COMM_WORLD} for the world
 * group, or a communicator made by {@code MPI_Comm_split}. Counts above {@link #maxCount} elements
 * (C {@code int}, 2^31−1) are split into several calls; non-native (heap) arrays are staged through
 * native memory.
 *
 * <p>Every operation is a nonblocking MPI call ({@code MPI_Iallreduce}, {@code MPI_Iallgather},
 * {@code MPI_Ireduce_scatter_block}, {@code MPI_Isend}, {@code MPI_Irecv}) that {@link MpiRuntime#await}
 * polls to completion within the deadline. The buffers MPI was given stay reachable until then
 * ({@link Reference#reachabilityFence}): an array's native memory is released only once nothing refers
 * to it, and a nonblocking call, unlike a blocking one, returns while MPI still uses it.
 *
 * <p>Failures: a collective that fails or does not complete within the deadline ends the job
 * ({@link MpiRuntime#abortJob}); so does a send or receive that does not complete, since MPI keeps its
 * buffer. A receive that completes with an error (a longer message than asked for) or a short message is
 * a {@link DistributedException}, and the group stays usable.
 */
final class MpiGroup implements GroupImpl {
    /** The largest element count one MPI call gets; tests lower it to exercise the chunked paths. */
    static volatile long maxCount = Integer.MAX_VALUE;
    private static final int TAG = 0;
    private static final int ANY_TAG = -1;

    private final MpiRuntime rt;
    private final long comm;
    private final boolean world;
    private final int rank;
    private final int size;
    private volatile boolean closed;

    // GroupImpl runs one operation at a time per group, so one request, flag and status serve them all, and
    // the operation in progress is described by these fields (read only when a message is needed).
    private final MemorySegment request;
    private final MemorySegment flag;
    private final MemorySegment status;
    private String opName;
    private String opFunction;
    private Array opArray;
    private int opCount;
    private int opPeer = -1;
    private final LongFunction<DistributedException> onDeadline = this::deadlineFailure;

    MpiGroup(MpiRuntime rt, long comm, boolean world) {
        this.rt = rt;
        this.comm = comm;
        this.world = world;
        rt.errorsReturn(comm);
        this.rank = rt.queryInt(rt.lib.commRank, comm, "MPI_Comm_rank");
        this.size = rt.queryInt(rt.lib.commSize, comm, "MPI_Comm_size");
        Arena scratch = Arena.ofAuto();                 // lives as long as this group
        this.request = scratch.allocate(8, 8);
        this.flag = scratch.allocate(ValueLayout.JAVA_INT);
        this.status = scratch.allocate(rt.abi.statusSize(), 8);
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    @Override public String backendName() { return "mpi"; }

    /** The job's liveness watch ends MPI waits (and the job) when a rank is lost; see {@link MpiRuntime#useLiveness}. */
    @Override
    public void useLiveness(Liveness liveness) { rt.useLiveness(liveness); }

    private String where() { return "rank " + rank + " of " + size; }

    // ---------------------------------------------------------------- split

    @Override
    public GroupImpl split(int color, int key) {
        checkOpen();
        // MPI_Comm_split blocks until every rank calls it; a barrier polled against the deadline comes first.
        barrier("split", "MPI_Ibarrier before MPI_Comm_split");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(8);
            rt.enter();
            try {
                rt.check((int) rt.lib.commSplit.invokeExact(comm, color, key, out), "MPI_Comm_split",
                        () -> "colour " + color + ", key " + key + ", " + where());
            } finally {
                rt.exit();
            }
            return new MpiGroup(rt, rt.abi.readHandle(out), false);
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw rt.wrap("MPI_Comm_split", t);
        }
    }

    /** {@code MPI_Ibarrier} polled to completion; a failure or the deadline ends the job. */
    private void barrier(String name, String function) {
        describe(name, function, null, 0, -1);
        rt.started();
        try {
            int rc;
            rt.enter();
            try {
                rc = (int) rt.lib.ibarrier.invokeExact(comm, request);
            } finally {
                rt.exit();
            }
            finishCollective(rc, 0);
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw rt.wrap("MPI_Ibarrier", t);
        } finally {
            done();
        }
    }

    // ---------------------------------------------------------------- collectives

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        checkOpen();
        DType t = in.dtype();
        long e = in.size();
        if (e == 0) return;
        long type = rt.datatype(t);
        long mop = rt.op(t, op);
        int s = t.itemSize();
        boolean staged = !in.segment().isNative() || !out.segment().isNative();
        Arena arena = staged ? Arena.ofConfined() : null;   // no per-call arena on the usual (native) path
        try {
            MemorySegment dst = writable(out, arena);
            boolean inPlace = in.segment().isNative() && in.segment().address() == dst.address();
            MemorySegment src = inPlace ? dst : readable(in, arena);
            long bytes = e * s;
            for (long o = 0; o < e; o += maxCount) {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment send = inPlace ? rt.inPlace() : (c == e ? src : src.asSlice(o * s, (long) c * s));
                MemorySegment recv = c == e && dst.byteSize() == bytes ? dst : dst.asSlice(o * s, (long) c * s);
                describe(reduceName(op), "MPI_Iallreduce", in, c, -1);
                rt.started();
                int rc;
                rt.enter();
                try {
                    rc = (int) rt.lib.iallreduce.invokeExact(send, recv, c, type, mop, comm, request);
                } finally {
                    rt.exit();
                }
                finishCollective(rc, (long) c * s * 2);
                Reference.reachabilityFence(send);
                Reference.reachabilityFence(recv);
            }
            copyBack(dst, out);
            Reference.reachabilityFence(src);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Iallreduce", ex);
        } finally {
            done();
            if (arena != null) arena.close();
        }
    }

    @Override
    public void allGather(Array in, Array out) {
        checkOpen();
        DType t = in.dtype();
        long e = in.size();
        if (e == 0) return;
        long type = rt.datatype(t);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = writable(out, arena);
            if (e <= maxCount) {
                gather(src, (int) e, dst, type, in);
            } else {
                // Chunk j of every rank's block goes through a staging buffer of size() chunks.
                long chunk = maxCount;
                MemorySegment stage = arena.allocate(size * chunk * s, 16);
                for (long o = 0; o < e; o += chunk) {
                    int c = (int) Math.min(chunk, e - o);
                    gather(src.asSlice(o * s, (long) c * s), c, stage, type, in);
                    for (int q = 0; q < size; q++) {
                        MemorySegment.copy(stage, (long) q * c * s, dst, (q * e + o) * s, (long) c * s);
                    }
                }
            }
            copyBack(dst, out);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Iallgather", ex);
        } finally {
            done();
        }
    }

    private void gather(MemorySegment src, int c, MemorySegment dst, long type, Array in) throws Throwable {
        describe("all_gather", "MPI_Iallgather", in, c, -1);
        rt.started();
        int rc;
        rt.enter();
        try {
            rc = (int) rt.lib.iallgather.invokeExact(src, c, type, dst, c, type, comm, request);
        } finally {
            rt.exit();
        }
        finishCollective(rc, (long) c * in.dtype().itemSize() * size);
        Reference.reachabilityFence(src);
        Reference.reachabilityFence(dst);
    }

    @Override
    public void sumScatter(Array in, Array out) {
        checkOpen();
        DType t = in.dtype();
        long chunkElems = out.size();
        if (chunkElems == 0) return;
        long type = rt.datatype(t);
        long mop = rt.op(t, ReduceOp.SUM);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = writable(out, arena);
            if (chunkElems <= maxCount) {
                reduceScatter(src, dst, (int) chunkElems, type, mop, in);
            } else {
                // Piece [o, o+c) of every rank's chunk is packed contiguously, then reduce-scattered.
                long piece = maxCount;
                MemorySegment stage = arena.allocate(size * piece * s, 16);
                for (long o = 0; o < chunkElems; o += piece) {
                    int c = (int) Math.min(piece, chunkElems - o);
                    for (int q = 0; q < size; q++) {
                        MemorySegment.copy(src, (q * chunkElems + o) * s, stage, (long) q * c * s, (long) c * s);
                    }
                    reduceScatter(stage, dst.asSlice(o * s, (long) c * s), c, type, mop, in);
                }
            }
            copyBack(dst, out);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Ireduce_scatter_block", ex);
        } finally {
            done();
        }
    }

    private void reduceScatter(MemorySegment src, MemorySegment dst, int c, long type, long mop, Array in) throws Throwable {
        describe("sum_scatter", "MPI_Ireduce_scatter_block", in, c, -1);
        rt.started();
        int rc;
        rt.enter();
        try {
            rc = (int) rt.lib.ireduceScatterBlock.invokeExact(src, dst, c, type, mop, comm, request);
        } finally {
            rt.exit();
        }
        finishCollective(rc, (long) c * in.dtype().itemSize() * size);
        Reference.reachabilityFence(src);
        Reference.reachabilityFence(dst);
    }

    /**
     * After a collective's start returned {@code startRc}: waits for it; a start error, a completion error, a
     * failed reduction upcall or the deadline ends the job. Always balances {@link MpiRuntime#started()}.
     */
    private void finishCollective(int startRc, long bytes) {
        try {
            if (startRc != 0) throw rt.abortJob(mpiFailure(startRc));
            int rc = rt.await(request, flag, status, bytes, onDeadline);
            if (rc != 0) throw rt.abortJob(mpiFailure(rc));
            if (MpiUserOps.failed()) {
                Throwable upcall = MpiUserOps.takeFailure();
                throw rt.abortJob(new DistributedException(opFunction + " (" + what() + "): the jdist reduction callback "
                        + "failed: " + upcall, upcall, rank, operation()));
            }
        } finally {
            rt.finished();
        }
    }

    // ---------------------------------------------------------------- point to point

    @Override
    public void send(Array x, int dst) {
        checkOpen();
        DType t = x.dtype();
        long e = x.size();
        long type = rt.datatype(t);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = readable(x, arena);
            long o = 0;
            do {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment piece = src.asSlice(o * s, (long) c * s);
                describe("send", "MPI_Isend", x, c, dst);
                rt.started();
                try {
                    int rc;
                    rt.enter();
                    try {
                        rc = (int) rt.lib.isend.invokeExact(piece, c, type, dst, TAG, comm, request);
                    } finally {
                        rt.exit();
                    }
                    if (rc == 0) rc = rt.await(request, flag, status, (long) c * s, onDeadline);
                    if (rc != 0) throw mpiFailure(rc);
                } finally {
                    rt.finished();
                }
                Reference.reachabilityFence(piece);
                o += c;
            } while (o < e);
            Reference.reachabilityFence(src);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Isend", ex);
        } finally {
            done();
        }
    }

    @Override
    public void recv(Array out, int src) {
        checkOpen();
        DType t = out.dtype();
        long e = out.size();
        long type = rt.datatype(t);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = writable(out, arena);
            MemorySegment got = arena.allocate(ValueLayout.JAVA_INT);
            long o = 0;
            do {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment piece = dst.asSlice(o * s, (long) c * s);
                describe("recv", "MPI_Irecv", out, c, src);
                rt.started();
                try {
                    int rc;
                    rt.enter();
                    try {
                        rc = (int) rt.lib.irecv.invokeExact(piece, c, type, src, ANY_TAG, comm, request);
                    } finally {
                        rt.exit();
                    }
                    if (rc == 0) rc = rt.await(request, flag, status, (long) c * s, onDeadline);
                    // Completed with an error (e.g. MPI_ERR_TRUNCATE): MPI is done with the buffer; the group stays usable.
                    if (rc != 0) throw mpiFailure(rc);
                } finally {
                    rt.finished();
                }
                Reference.reachabilityFence(piece);
                rt.enter();
                try {
                    rt.check((int) rt.lib.getCount.invokeExact(status, type, got), "MPI_Get_count", this::what);
                } finally {
                    rt.exit();
                }
                int received = got.get(ValueLayout.JAVA_INT, 0);
                if (received != c) {
                    throw new DistributedException("recv on " + where() + " expected " + c + " " + t.mlxName() + " elements from "
                            + "rank " + src + " but the message held " + received + "; sender and receiver must use the same "
                            + "element count and dtype", null, rank, operation());
                }
                o += c;
            } while (o < e);
            copyBack(dst, out);
            Reference.reachabilityFence(dst);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Irecv", ex);
        } finally {
            done();
        }
    }

    // ---------------------------------------------------------------- what is running, for messages

    /** Forgets the operation's array, so the group does not keep it alive. */
    private void done() {
        opArray = null;
    }

    private void describe(String name, String function, Array array, int count, int peer) {
        opName = name;
        opFunction = function;
        opArray = array;
        opCount = count;
        opPeer = peer;
    }

    /** {@code "all_sum float32[1024]"}. */
    private String operation() {
        return opArray == null ? opName : opName + " " + opArray.dtype().mlxName() + Arrays.toString(opArray.shape()).replace(" ", "");
    }

    /** {@code "all_sum float32[1024], 1024 elements per call, rank 0 of 3"}. */
    private String what() {
        String peer = opPeer < 0 ? "" : opName.equals("send") ? " to rank " + opPeer : " from rank " + opPeer;
        return operation() + peer + (opArray == null ? "" : ", " + opCount + " elements in this call") + ", " + where();
    }

    private DistributedException mpiFailure(int rc) {
        return new DistributedException(opFunction + " (" + what() + ") failed: " + rt.lib.errorString(rc) + " (MPI error code "
                + rc + ", " + rt.abi.family() + ")", null, rank, operation());
    }

    private DistributedException deadlineFailure(long waitedNanos) {
        Duration d = rt.deadline();
        boolean p2p = opPeer >= 0;
        String who = p2p
                ? "rank " + opPeer + " did not " + (opName.equals("send") ? "receive it" : "send it") + " (stopped, dead, much "
                        + "slower, or not calling the matching " + (opName.equals("send") ? "recv" : "send") + ")"
                : "a rank of this group is stopped, has died, is much slower than this one, or called a different operation";
        return new DeadlineExceededException("mpi " + where() + ": " + operation() + (p2p ? (opName.equals("send") ? " to" : " from")
                + " rank " + opPeer : "") + " (" + opFunction + ") did not complete within " + MpiRuntime.seconds(d) + " ("
                + "JDIST_TIMEOUT; waited " + MpiRuntime.seconds(Duration.ofNanos(waitedNanos)) + "): " + who + ". MPI cannot continue past "
                + "a failed operation, so jdist ends the job. If a rank legitimately spends longer between operations, raise "
                + "JDIST_TIMEOUT", null, rank, operation(), d);
    }

    private static String reduceName(ReduceOp op) {
        return switch (op) {
            case SUM -> "all_sum";
            case MAX -> "all_max";
            case MIN -> "all_min";
        };
    }

    // ---------------------------------------------------------------- lifecycle

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (world) {
            rt.finalizeMpi();
        } else if (!rt.finalized()) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment h = arena.allocate(8);
                rt.abi.writeHandle(h, comm);
                rt.enter();
                try {
                    rt.check((int) rt.lib.commFree.invokeExact(h), "MPI_Comm_free", where());
                } finally {
                    rt.exit();
                }
            } catch (DistributedException e) {
                throw e;
            } catch (Throwable t) {
                throw rt.wrap("MPI_Comm_free", t);
            }
        }
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("this MPI group (" + where() + ") is closed");
    }

    /** The array's own native memory, or a native copy of a heap array. */
    private static MemorySegment readable(Array a, Arena arena) {
        MemorySegment seg = a.segment();
        if (seg.isNative()) return seg;
        MemorySegment copy = arena.allocate(Math.max(1, seg.byteSize()), 16).asSlice(0, seg.byteSize());
        MemorySegment.copy(seg, 0, copy, 0, seg.byteSize());
        return copy;
    }

    /** The array's own native memory, or native scratch that {@link #copyBack} copies into a heap array. */
    private static MemorySegment writable(Array a, Arena arena) {
        MemorySegment seg = a.segment();
        if (seg.isNative()) return seg;
        return arena.allocate(Math.max(1, seg.byteSize()), 16).asSlice(0, seg.byteSize());
    }

    private static void copyBack(MemorySegment staged, Array out) {
        if (staged != out.segment()) MemorySegment.copy(staged, 0, out.segment(), 0, staged.byteSize());
    }
}
