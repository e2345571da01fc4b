package dev.jdist.mpi;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerOp;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.Liveness;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.function.LongFunction;

/**
 * A group over one MPI communicator (docs/reference/collectives.md §5.3): {@code MPI_COMM_WORLD} for the world
 * group, or a communicator made by {@code MPI_Comm_split}. Counts above {@link #maxCount} elements
 * (C {@code int}, 2^31−1) are split into several calls; non-native (heap) arrays are staged through
 * native memory.
 *
 * <p>Every operation is a nonblocking MPI call ({@code MPI_Iallreduce}, {@code MPI_Iallgather},
 * {@code MPI_Ireduce_scatter_block}, {@code MPI_Ibcast}, {@code MPI_Ibarrier}, {@code MPI_Ialltoall(v)},
 * {@code MPI_Igather}, {@code MPI_Iscatter}, {@code MPI_Isend}, {@code MPI_Irecv}) that {@link MpiRuntime#await}
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
    private int opRoot = -1;
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
        // Written out for the reason allReduce is: it allocates nothing.
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
        // Written out, not through operation() and collective(): on the usual path (native arrays) nothing is allocated,
        // not even an arena, and their lambdas would be (they capture this call's arguments: 48-56 bytes a call, measured).
        boolean staged = !in.segment().isNative() || !out.segment().isNative();
        Arena arena = staged ? Arena.ofConfined() : null;
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
        operation("MPI_Iallgather", arena -> {
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
        });
    }

    private void gather(MemorySegment src, int c, MemorySegment dst, long type, Array in) throws Throwable {
        describe("all_gather", "MPI_Iallgather", in, c, -1);
        collective(() -> (int) rt.lib.iallgather.invokeExact(src, c, type, dst, c, type, comm, request),
                (long) c * in.dtype().itemSize() * size);
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
        operation("MPI_Ireduce_scatter_block", arena -> {
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
        });
    }

    private void reduceScatter(MemorySegment src, MemorySegment dst, int c, long type, long mop, Array in) throws Throwable {
        describe("sum_scatter", "MPI_Ireduce_scatter_block", in, c, -1);
        collective(() -> (int) rt.lib.ireduceScatterBlock.invokeExact(src, dst, c, type, mop, comm, request),
                (long) c * in.dtype().itemSize() * size);
        Reference.reachabilityFence(src);
        Reference.reachabilityFence(dst);
    }

    /** One nonblocking MPI call's start ({@code MPI_I…} into {@link #request}): returns its code. */
    @FunctionalInterface
    private interface Start {
        int call() throws Throwable;
    }

    /** What an operation does between the skeleton's set-up and tidy-up ({@link #operation}). */
    @FunctionalInterface
    private interface Body {
        void run(Arena arena) throws Throwable;
    }

    /**
     * The skeleton of an operation: runs {@code body} with a confined arena for staging, lets a {@link
     * DistributedException} through and wraps anything else as a failure to call {@code function}; then forgets the
     * operation's array. Not for allReduce, broadcast and barrier, which allocate nothing per call (see allReduce).
     */
    private void operation(String function, Body body) {
        try (Arena arena = Arena.ofConfined()) {
            body.run(arena);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap(function, ex);
        } finally {
            done();
        }
    }

    /** Calls {@code start} under the runtime's lock. */
    private int locked(Start start) throws Throwable {
        rt.enter();
        try {
            return start.call();
        } finally {
            rt.exit();
        }
    }

    /** Starts a collective ({@code start}, under the runtime's lock) and waits for it ({@link #finishCollective}). */
    private void collective(Start start, long bytes) throws Throwable {
        rt.started();
        finishCollective(locked(start), bytes);
    }

    /**
     * A send or receive: starts it ({@code start}, under the runtime's lock) and waits for it; an error it starts or
     * completes with is a {@link DistributedException}, and the group stays usable (MPI is done with the buffer).
     */
    private void pointToPoint(Start start, long bytes) throws Throwable {
        rt.started();
        try {
            int rc = locked(start);
            if (rc == 0) rc = rt.await(request, flag, status, bytes, onDeadline);
            if (rc != 0) throw mpiFailure(rc);
        } finally {
            rt.finished();
        }
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
        operation("MPI_Isend", arena -> {
            MemorySegment src = readable(x, arena);
            long o = 0;
            do {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment piece = src.asSlice(o * s, (long) c * s);
                describe("send", "MPI_Isend", x, c, dst);
                pointToPoint(() -> (int) rt.lib.isend.invokeExact(piece, c, type, dst, TAG, comm, request), (long) c * s);
                Reference.reachabilityFence(piece);
                o += c;
            } while (o < e);
            Reference.reachabilityFence(src);
        });
    }

    @Override
    public void recv(Array out, int src) {
        checkOpen();
        DType t = out.dtype();
        long e = out.size();
        long type = rt.datatype(t);
        int s = t.itemSize();
        operation("MPI_Irecv", arena -> {
            MemorySegment dst = writable(out, arena);
            MemorySegment got = arena.allocate(ValueLayout.JAVA_INT);
            long o = 0;
            do {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment piece = dst.asSlice(o * s, (long) c * s);
                describe("recv", "MPI_Irecv", out, c, src);
                // Completed with an error (e.g. MPI_ERR_TRUNCATE): MPI is done with the buffer; the group stays usable.
                pointToPoint(() -> (int) rt.lib.irecv.invokeExact(piece, c, type, src, ANY_TAG, comm, request), (long) c * s);
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
        });
    }

    // ---------------------------------------------------------------- the operations MLX lacks (docs/reference/collectives.md §13.8)

    @Override
    public void barrier() {
        checkOpen();
        barrier("barrier", "MPI_Ibarrier");
    }

    /** {@code MPI_Ibcast}, in calls of at most {@link #maxCount} elements. */
    @Override
    public void broadcast(Array buffer, int root) {
        checkOpen();
        DType t = buffer.dtype();
        long e = buffer.size();
        if (e == 0) return;
        long type = rt.datatype(t);
        int s = t.itemSize();
        // Written out for the reason allReduce is: on native memory it allocates nothing.
        Arena arena = buffer.segment().isNative() ? null : Arena.ofConfined();
        try {
            MemorySegment buf = rank == root ? readable(buffer, arena) : writable(buffer, arena);
            for (long o = 0; o < e; o += maxCount) {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment piece = c == e ? buf : buf.asSlice(o * s, (long) c * s);
                describeRooted("broadcast", "MPI_Ibcast", buffer, c, root);
                rt.started();
                int rc;
                rt.enter();
                try {
                    rc = (int) rt.lib.ibcast.invokeExact(piece, c, type, root, comm, request);
                } finally {
                    rt.exit();
                }
                finishCollective(rc, (long) c * s);
                Reference.reachabilityFence(piece);
            }
            if (rank != root) copyBack(buf, buffer);
            Reference.reachabilityFence(buf);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Ibcast", ex);
        } finally {
            done();
            if (arena != null) arena.close();
        }
    }

    /** {@code MPI_Ialltoall}; blocks above {@link #maxCount} elements go as point-to-point messages. */
    @Override
    public void allToAll(Array in, Array out) {
        checkOpen();
        long block = in.size() / size;
        if (block == 0) return;
        if (block > maxCount) {
            long[] counts = new long[size];
            Arrays.fill(counts, block);
            pointToPointAllToAll("all_to_all", in, counts, out, counts);
            return;
        }
        DType t = in.dtype();
        long type = rt.datatype(t);
        operation("MPI_Ialltoall", arena -> {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = writable(out, arena);
            describe("all_to_all", "MPI_Ialltoall", in, (int) block, -1);
            collective(() -> (int) rt.lib.ialltoall.invokeExact(src, (int) block, type, dst, (int) block, type, comm, request),
                    in.nbytes());
            Reference.reachabilityFence(src);
            Reference.reachabilityFence(dst);
            copyBack(dst, out);
        });
    }

    /** {@code MPI_Ialltoallv}; counts or displacements beyond C {@code int} go as point-to-point messages. */
    @Override
    public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        checkOpen();
        long[] sendDispls = displacements(sendCounts);
        long[] recvDispls = displacements(recvCounts);
        if (!fitsInt(sendCounts, sendDispls) || !fitsInt(recvCounts, recvDispls)) {
            pointToPointAllToAll("all_to_all_v", in, sendCounts, out, recvCounts);
            return;
        }
        DType t = in.dtype();
        long type = rt.datatype(t);
        operation("MPI_Ialltoallv", arena -> {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = writable(out, arena);
            MemorySegment sc = ints(arena, sendCounts), sd = ints(arena, sendDispls);
            MemorySegment rcs = ints(arena, recvCounts), rd = ints(arena, recvDispls);
            describe("all_to_all_v", "MPI_Ialltoallv", in, (int) Math.min(Integer.MAX_VALUE, in.size()), -1);
            collective(() -> (int) rt.lib.ialltoallv.invokeExact(src, sc, sd, type, dst, rcs, rd, type, comm, request),
                    in.nbytes() + out.nbytes());
            Reference.reachabilityFence(src);
            Reference.reachabilityFence(dst);
            Reference.reachabilityFence(sc);
            Reference.reachabilityFence(sd);
            Reference.reachabilityFence(rcs);
            Reference.reachabilityFence(rd);
            copyBack(dst, out);
        });
    }

    /** {@code MPI_Igather}; blocks above {@link #maxCount} elements go as point-to-point messages. */
    @Override
    public void gather(Array in, Array out, int root) {
        checkOpen();
        long c = in.size();
        if (c == 0) return;
        DType t = in.dtype();
        int s = t.itemSize();
        if (c > maxCount) {
            List<Message> messages = new ArrayList<>();
            if (rank == root) {
                MemorySegment.copy(in.segment(), 0, out.segment(), rank * c * s, c * s);
                for (int q = 0; q < size; q++) if (q != root) messages.add(new Message(false, out, q * c * s, c, q));
            } else {
                messages.add(new Message(true, in, 0, c, root));
            }
            exchange("gather", messages, COLLECTIVE_TAG);
            return;
        }
        long type = rt.datatype(t);
        operation("MPI_Igather", arena -> {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = rank == root ? writable(out, arena) : MemorySegment.NULL;
            describeRooted("gather", "MPI_Igather", in, (int) c, root);
            collective(() -> (int) rt.lib.igather.invokeExact(src, (int) c, type, dst, (int) c, type, root, comm, request),
                    c * s * (rank == root ? size : 1));
            Reference.reachabilityFence(src);
            Reference.reachabilityFence(dst);
            if (rank == root) copyBack(dst, out);
        });
    }

    /** {@code MPI_Iscatter}; blocks above {@link #maxCount} elements go as point-to-point messages. */
    @Override
    public void scatter(Array in, Array out, int root) {
        checkOpen();
        long c = out.size();
        if (c == 0) return;
        DType t = out.dtype();
        int s = t.itemSize();
        if (c > maxCount) {
            List<Message> messages = new ArrayList<>();
            if (rank == root) {
                MemorySegment.copy(in.segment(), rank * c * s, out.segment(), 0, c * s);
                for (int q = 0; q < size; q++) if (q != root) messages.add(new Message(true, in, q * c * s, c, q));
            } else {
                messages.add(new Message(false, out, 0, c, root));
            }
            exchange("scatter", messages, COLLECTIVE_TAG);
            return;
        }
        long type = rt.datatype(t);
        operation("MPI_Iscatter", arena -> {
            MemorySegment src = rank == root ? readable(in, arena) : MemorySegment.NULL;
            MemorySegment dst = writable(out, arena);
            describeRooted("scatter", "MPI_Iscatter", out, (int) c, root);
            collective(() -> (int) rt.lib.iscatter.invokeExact(src, (int) c, type, dst, (int) c, type, root, comm, request),
                    c * s * (rank == root ? size : 1));
            Reference.reachabilityFence(src);
            Reference.reachabilityFence(dst);
            copyBack(dst, out);
        });
    }

    /** Every transfer as an {@code MPI_Isend} or {@code MPI_Irecv} (tag 0, as send and recv), all posted, then waited for. */
    @Override
    public void batchSendRecv(List<PeerOp> ops) {
        checkOpen();
        List<Message> messages = new ArrayList<>(ops.size());
        for (PeerOp op : ops) messages.add(new Message(op.isSend(), op.array(), 0, op.array().size(), op.peer()));
        exchange("batch_send_recv", messages, TAG);
    }

    /** The tag of the messages jdist exchanges for a collective whose counts do not fit one MPI call. */
    private static final int COLLECTIVE_TAG = 1;

    /** {@code elements} elements of {@code array} from byte {@code offset}, to ({@code send}) or from {@code peer}. */
    private record Message(boolean send, Array array, long offset, long elements, int peer) {}

    /** all_to_all(v) as messages: block q to and from rank q, this rank's own block copied. */
    private void pointToPointAllToAll(String name, Array in, long[] sendCounts, Array out, long[] recvCounts) {
        int s = in.dtype().itemSize();
        long[] sd = displacements(sendCounts), rd = displacements(recvCounts);
        MemorySegment.copy(in.segment(), sd[rank] * s, out.segment(), rd[rank] * s, sendCounts[rank] * s);
        List<Message> messages = new ArrayList<>();
        for (int q = 0; q < size; q++) {
            if (q == rank) continue;
            messages.add(new Message(false, out, rd[q] * s, recvCounts[q], q));
            messages.add(new Message(true, in, sd[q] * s, sendCounts[q], q));
        }
        exchange(name, messages, COLLECTIVE_TAG);
    }

    /**
     * Posts every message (cut into calls of at most {@link #maxCount} elements, in order, so that the messages to
     * one peer arrive in order), then waits for each. A receive that completes with an error or a wrong count is
     * reported once all have completed (MPI is then done with every buffer); a deadline ends the job.
     */
    private void exchange(String name, List<Message> messages, int tag) {
        operation("MPI_Isend/MPI_Irecv", arena -> {
            int calls = 0;
            for (Message m : messages) calls += (int) Math.max(1, (m.elements() + maxCount - 1) / maxCount);
            MemorySegment requests = arena.allocate(8L * calls, 8);
            MemorySegment statuses = arena.allocate((long) rt.abi.statusSize() * calls, 8);
            MemorySegment got = arena.allocate(ValueLayout.JAVA_INT);
            // One native view per array (messages often share one): a heap array is staged once, with its
            // contents, so blocks this rank copied itself and blocks from several peers all come back.
            IdentityHashMap<Array, MemorySegment> buffers = new IdentityHashMap<>();
            Message[] ofCall = new Message[calls];
            int[] countOfCall = new int[calls];
            int posted = 0;
            DistributedException first = null;
            try {
                for (int i = 0; i < messages.size(); i++) {
                    Message m = messages.get(i);
                    int s = m.array().dtype().itemSize();
                    long type = rt.datatype(m.array().dtype());
                    MemorySegment whole = buffers.computeIfAbsent(m.array(), a -> readable(a, arena));
                    long o = 0;
                    do {
                        int c = (int) Math.min(maxCount, m.elements() - o);
                        MemorySegment piece = whole.asSlice(m.offset() + o * s, (long) c * s);
                        MemorySegment req = requests.asSlice(8L * posted, 8);
                        describe(name, m.send() ? "MPI_Isend" : "MPI_Irecv", m.array(), c, m.peer());
                        int rc;
                        rt.started();
                        rt.enter();
                        try {
                            rc = m.send() ? (int) rt.lib.isend.invokeExact(piece, c, type, m.peer(), tag, comm, req)
                                    : (int) rt.lib.irecv.invokeExact(piece, c, type, m.peer(), tag == TAG ? ANY_TAG : tag, comm, req);
                        } finally {
                            rt.exit();
                        }
                        if (rc != 0) {
                            rt.finished();
                            throw mpiFailure(rc);
                        }
                        ofCall[posted] = m;
                        countOfCall[posted] = c;
                        posted++;
                        o += c;
                    } while (o < m.elements());
                }
            } catch (DistributedException e) {
                first = e;
            }
            // wait for every posted call, even after a failure: MPI holds their buffers until then
            for (int k = 0; k < posted; k++) {
                Message m = ofCall[k];
                MemorySegment status = statuses.asSlice((long) rt.abi.statusSize() * k, rt.abi.statusSize());
                describe(name, m.send() ? "MPI_Isend" : "MPI_Irecv", m.array(), countOfCall[k], m.peer());
                int rc;
                try {
                    rc = rt.await(requests.asSlice(8L * k, 8), flag, status, (long) countOfCall[k] * m.array().dtype().itemSize(),
                            onDeadline);
                } finally {
                    rt.finished();
                }
                if (rc != 0) {
                    if (first == null) first = mpiFailure(rc);
                    continue;
                }
                if (!m.send() && first == null) {
                    long type = rt.datatype(m.array().dtype());
                    rt.enter();
                    try {
                        rt.check((int) rt.lib.getCount.invokeExact(status, type, got), "MPI_Get_count", this::what);
                    } finally {
                        rt.exit();
                    }
                    int received = got.get(ValueLayout.JAVA_INT, 0);
                    if (received != countOfCall[k]) {
                        first = new DistributedException(name + " on " + where() + " expected " + countOfCall[k] + " "
                                + m.array().dtype().mlxName() + " elements from rank " + m.peer() + " but the message held "
                                + received + "; sender and receiver must use the same element count and dtype", null, rank, operation());
                    }
                }
            }
            if (first != null) throw first;
            IdentityHashMap<Array, Boolean> received = new IdentityHashMap<>();
            for (Message m : messages) {
                if (!m.send() && received.put(m.array(), true) == null) copyBack(buffers.get(m.array()), m.array());
            }
            Reference.reachabilityFence(buffers);
        });
    }

    /** Offsets of blocks of {@code counts} elements laid back to back. */
    private static long[] displacements(long[] counts) {
        long[] d = new long[counts.length];
        for (int q = 1; q < counts.length; q++) d[q] = d[q - 1] + counts[q - 1];
        return d;
    }

    private static boolean fitsInt(long[] counts, long[] displs) {
        for (int q = 0; q < counts.length; q++) if (counts[q] > maxCount || displs[q] > maxCount) return false;
        return true;
    }

    private static MemorySegment ints(Arena arena, long[] values) {
        MemorySegment m = arena.allocate(ValueLayout.JAVA_INT, values.length);
        for (int i = 0; i < values.length; i++) m.setAtIndex(ValueLayout.JAVA_INT, i, (int) values[i]);
        return m;
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
        opRoot = -1;
    }

    /** A collective with a root (broadcast, gather, scatter): the root is named in messages. */
    private void describeRooted(String name, String function, Array array, int count, int root) {
        describe(name, function, array, count, -1);
        opRoot = root;
    }

    /** {@code "all_sum float32[1024]"}. */
    private String operation() {
        return opArray == null ? opName : opName + " " + opArray.dtype().mlxName() + Arrays.toString(opArray.shape()).replace(" ", "");
    }

    /** {@code "all_sum float32[1024], 1024 elements per call, rank 0 of 3"}. */
    private String what() {
        String peer = opPeer < 0 ? "" : opName.equals("send") ? " to rank " + opPeer : " from rank " + opPeer;
        String root = opRoot < 0 ? "" : " (root " + opRoot + ")";
        return operation() + peer + root + (opArray == null ? "" : ", " + opCount + " elements in this call") + ", " + where();
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
