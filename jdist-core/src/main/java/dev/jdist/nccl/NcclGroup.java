package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupAccess;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.Liveness;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One NCCL communicator on one GPU, with its CUDA stream (docs/reference/collectives.md §6.4).
 *
 * <p>Host {@link Array}s reach it through {@link Group} and are staged: copied into device buffers
 * that this group keeps and reuses (growing them when an array is larger than any before), reduced
 * or gathered by NCCL on the group's stream, and copied back; each call returns when the result is
 * in host memory.
 *
 * <p>{@link DeviceArray}s skip the staging: {@link #allSum(DeviceArray)}, {@link #allGather(DeviceArray)}
 * and the rest hand device pointers straight to NCCL. They always call NCCL, also in a 1-rank group
 * (unlike {@link Group}, whose 1-rank collectives return their input), and return once the stream
 * has finished. Get this object from a group with {@link #of(Group)}.
 *
 * <p>All calls on one group run one at a time. NCCL accepts int8, uint8, int32, uint32, int64, uint64,
 * float16, float32, float64 and bfloat16; bool, int16, uint16 and complex64 are an
 * {@link IllegalArgumentException}. NCCL and CUDA failures are {@link DistributedException}s that
 * carry NCCL's or CUDA's error string.
 *
 * <p>No hang: the communicator is non-blocking (NCCL 2.14 and later), and every operation is waited for
 * by polling {@code ncclCommGetAsyncError} and {@code cudaStreamQuery} against the deadline
 * ({@code JDIST_TIMEOUT}; see {@link NcclProgress}). A collective that does not complete in time, or a
 * communicator NCCL reports broken (a peer process gone: {@code ncclRemoteError}), ends in
 * {@code ncclCommAbort} and a {@link DeadlineExceededException} or {@link dev.jdist.PeerLostException}
 * carrying the rank, the operation and the deadline; the group is unusable from then on, and
 * {@link #close()} returns within seconds.
 */
public final class NcclGroup implements GroupImpl {

    private final NcclNatives natives;
    private final CudaRuntime cuda;
    private final NcclApi nccl;
    private final int device;
    private final int rank;
    private final int size;
    private final ReentrantLock lock = new ReentrantLock(true);
    private MemorySegment comm;
    private MemorySegment stream;
    private MemorySegment sendBuf = MemorySegment.NULL;
    private long sendCap;
    private MemorySegment recvBuf = MemorySegment.NULL;
    private long recvCap;
    /** {@code JDIST_TIMEOUT}, or the liveness watch's progress deadline once it runs. */
    private volatile Duration deadline;
    /** The job's liveness watch (every member is jdist), or null: its verdict ends a wait like an async error. */
    private volatile Liveness liveness;
    /** The communicator was created non-blocking: watch it with ncclCommGetAsyncError, end it with ncclCommFinalize. */
    private final boolean nonblocking;
    /** The failure that aborted the communicator; the group is unusable from then on. */
    private DistributedException broken;
    private boolean closed;

    NcclGroup(NcclNatives natives, int device, MemorySegment comm, MemorySegment stream, Duration deadline) {
        this.natives = natives;
        this.cuda = natives.cuda();
        this.nccl = natives.nccl();
        this.device = device;
        this.comm = comm;
        this.stream = stream;
        this.deadline = deadline;
        this.nonblocking = nccl.nonblocking();
        this.rank = nccl.commUserRank(comm);
        this.size = nccl.commCount(comm);
    }

    /**
     * The NCCL side of {@code group}, for device-memory collectives.
     *
     * @throws IllegalArgumentException when {@code group} is not an nccl group
     */
    public static NcclGroup of(Group group) {
        if (GroupAccess.impl(group) instanceof NcclGroup g) return g;
        throw new IllegalArgumentException("this is a '" + group.backend() + "' group, not an nccl group; form it with "
                + "Distributed.init(true, \"nccl\") under `jdist launch --backend nccl`");
    }

    @Override
    public int rank() { return rank; }

    @Override
    public int size() { return size; }

    @Override
    public String backendName() { return "nccl"; }

    /** The CUDA device (as this process numbers them) this group's communicator uses. */
    public int device() { return device; }

    // ------------------------------------------------------------------------------------ split

    @Override
    public NcclGroup split(int color, int key) {
        lock.lock();
        try {
            checkUsable();
            cuda.setDevice(device);
            String op = "split(color=" + color + ", key=" + key + ")";
            MemorySegment child;
            try {
                child = nccl.commSplit(comm, color, key);
            } catch (DistributedException e) {
                throw fail(new DistributedException(who() + ": " + e.getMessage(), e, rank, op));
            }
            if (child.equals(MemorySegment.NULL)) {
                throw new DistributedException("ncclCommSplit(color=" + color + ") gave rank " + rank + " no communicator");
            }
            if (nonblocking) awaitReady(child, op, "ncclCommSplit");
            MemorySegment childStream;
            try {
                childStream = cuda.streamCreate();
            } catch (RuntimeException e) {
                nccl.commDestroy(child);
                throw e;
            }
            return new NcclGroup(natives, device, child, childStream, deadline);
        } finally {
            lock.unlock();
        }
    }

    /** A non-blocking split's child: ready (its async error leaves in-progress) within the deadline, or aborted. */
    private void awaitReady(MemorySegment child, String op, String function) {
        int[] last = {NcclApi.IN_PROGRESS};
        boolean ready;
        try {
            ready = NcclProgress.await(deadline, () -> (last[0] = nccl.asyncError(child)) != NcclApi.IN_PROGRESS);
        } catch (DistributedException e) {
            NcclProgress.abort(nccl, child, who());
            throw e;
        }
        if (!ready) {
            NcclProgress.abort(nccl, child, who());
            throw new DeadlineExceededException(who() + ": " + op + " (" + function + ") did not complete within "
                    + NcclProgress.seconds(deadline) + " (JDIST_TIMEOUT): a rank of the group did not take part (stopped, "
                    + "dead, or calling another operation); jdist aborted the new communicator", null, rank, op, deadline);
        }
        if (last[0] != NcclApi.SUCCESS) {
            DistributedException e = NcclProgress.asyncFailure(nccl, child, last[0], rank, op, who());
            NcclProgress.abort(nccl, child, who());
            throw e;
        }
    }

    // ------------------------------------------------------------------------------------ host arrays (staged)

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        int type = NcclTypes.dataType(in.dtype(), opName(op));
        int redOp = NcclTypes.redOp(op);
        long count = in.size();
        staged(in, out, opName(op), (s, r) -> nccl.allReduce(s, r, count, type, redOp, comm, stream));
    }

    @Override
    public void allGather(Array in, Array out) {
        int type = NcclTypes.dataType(in.dtype(), "all_gather");
        long count = in.size();
        staged(in, out, "all_gather", (s, r) -> nccl.allGather(s, r, count, type, comm, stream));
    }

    @Override
    public void sumScatter(Array in, Array out) {
        int type = NcclTypes.dataType(in.dtype(), "sum_scatter");
        long count = out.size();
        staged(in, out, "sum_scatter", (s, r) -> nccl.reduceScatter(s, r, count, type, NcclApi.SUM, comm, stream));
    }

    /**
     * {@code ncclBroadcast} from {@code root} of the buffer's bytes (as ncclUint8, so every dtype moves), staged like the
     * other collectives (every rank's buffer is written back).
     */
    @Override
    public void broadcast(Array buffer, int root) {
        int type = NcclTypes.dataType(DType.UINT8, "broadcast");
        long count = buffer.nbytes();
        staged(buffer, buffer, "broadcast", (s, r) -> nccl.broadcast(s, r, count, type, root, comm, stream));
    }

    // ---------------------------------------------------------------- point to point: grouped ncclSend/ncclRecv
    // MLX's NCCL backend has no send/recv; jdist's issues each transfer as ncclSend/ncclRecv of bytes (ncclUint8, so
    // every dtype moves) between ncclGroupStart and ncclGroupEnd, which NCCL runs together: no order deadlocks.

    /** One transfer of bytes {@code [offset, offset+bytes)} of {@code array}, to ({@code send}) or from {@code peer}. */
    private record Transfer(boolean send, Array array, long offset, long bytes, int peer) {}

    @Override
    public void send(Array x, int dst) {
        transfers("send", List.of(new Transfer(true, x, 0, x.nbytes(), dst)));
    }

    @Override
    public void recv(Array out, int src) {
        transfers("recv", List.of(new Transfer(false, out, 0, out.nbytes(), src)));
    }

    @Override
    public void batchSendRecv(List<dev.jdist.PeerOp> ops) {
        List<Transfer> t = new java.util.ArrayList<>(ops.size());
        for (dev.jdist.PeerOp op : ops) t.add(new Transfer(op.isSend(), op.array(), 0, op.array().nbytes(), op.peer()));
        transfers("batch_send_recv", t);
    }

    @Override
    public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        int s = in.dtype().itemSize();
        List<Transfer> t = new java.util.ArrayList<>();
        long so = 0, ro = 0;
        for (int q = 0; q < size; q++) {
            long sb = sendCounts[q] * s, rb = recvCounts[q] * s;
            if (q == rank) MemorySegment.copy(in.segment(), so, out.segment(), ro, sb);
            else {
                t.add(new Transfer(true, in, so, sb, q));
                t.add(new Transfer(false, out, ro, rb, q));
            }
            so += sb;
            ro += rb;
        }
        transfers("all_to_all", t);
    }

    @Override
    public void gather(Array in, Array out, int root) {
        long b = in.nbytes();
        List<Transfer> t = new java.util.ArrayList<>();
        if (rank == root) {
            MemorySegment.copy(in.segment(), 0, out.segment(), rank * b, b);
            for (int q = 0; q < size; q++) if (q != root) t.add(new Transfer(false, out, q * b, b, q));
        } else {
            t.add(new Transfer(true, in, 0, b, root));
        }
        transfers("gather", t);
    }

    @Override
    public void scatter(Array in, Array out, int root) {
        long b = out.nbytes();
        List<Transfer> t = new java.util.ArrayList<>();
        if (rank == root) {
            MemorySegment.copy(in.segment(), rank * b, out.segment(), 0, b);
            for (int q = 0; q < size; q++) if (q != root) t.add(new Transfer(true, in, q * b, b, q));
        } else {
            t.add(new Transfer(false, out, 0, b, root));
        }
        transfers("scatter", t);
    }

    /** The sends packed into one staging buffer and the receives into another, as one NCCL group; then unpacked. */
    private void transfers(String name, List<Transfer> transfers) {
        long sendBytes = 0, recvBytes = 0;
        for (Transfer t : transfers) {
            if (t.send()) sendBytes += t.bytes();
            else recvBytes += t.bytes();
        }
        Array packedIn = Array.zeros(DType.UINT8, Math.toIntExact(sendBytes));
        Array packedOut = Array.zeros(DType.UINT8, Math.toIntExact(recvBytes));
        long o = 0;
        for (Transfer t : transfers) {
            if (!t.send()) continue;
            MemorySegment.copy(t.array().segment(), t.offset(), packedIn.segment(), o, t.bytes());
            o += t.bytes();
        }
        int type = NcclTypes.dataType(DType.UINT8, name);
        staged(packedIn, packedOut, name, (s, r) -> {
            nccl.groupStart(comm);
            try {
                long so = 0, ro = 0;
                for (Transfer t : transfers) {
                    if (t.bytes() == 0) continue;
                    long at = t.send() ? so : ro;
                    MemorySegment buf = MemorySegment.ofAddress((t.send() ? s : r).address() + at);
                    nccl.pointToPoint(t.send(), buf, t.bytes(), type, t.peer(), comm, stream);
                    if (t.send()) so += t.bytes();
                    else ro += t.bytes();
                }
            } finally {
                nccl.groupEnd(comm);
            }
        });
        o = 0;
        for (Transfer t : transfers) {
            if (t.send()) continue;
            MemorySegment.copy(packedOut.segment(), o, t.array().segment(), t.offset(), t.bytes());
            o += t.bytes();
        }
    }

    private interface DeviceOp {
        void run(MemorySegment send, MemorySegment recv);
    }

    /**
     * Host → staging buffer → NCCL → staging buffer → host, on this group's stream. The copy back is queued
     * only once the collective has completed: a copy into pageable host memory waits for the stream, and
     * must not wait for a collective that never ends.
     */
    private void staged(Array in, Array out, String name, DeviceOp op) {
        lock.lock();
        try {
            checkUsable();
            if (in.nbytes() == 0 && out.nbytes() == 0) return;
            Supplier<String> what = () -> describe(name, in.dtype(), in.shape(), "");
            cuda.setDevice(device);
            ensureStaging(in.nbytes(), out.nbytes());
            MemorySegment s = sendBuf;
            MemorySegment r = recvBuf;
            DeviceArray.withNative(in, false, src ->
                    cuda.memcpyAsync(s, src, in.nbytes(), CudaRuntime.HOST_TO_DEVICE, stream));
            launch(what, () -> op.run(s, r));
            DeviceArray.withNative(out, true, dst -> {
                cuda.memcpyAsync(dst, r, out.nbytes(), CudaRuntime.DEVICE_TO_HOST, stream);
                complete(() -> what.get() + " (copy of the result to the host)");
            });
        } finally {
            lock.unlock();
        }
    }

    /** {@code "all_sum float32[2,3]"}: the operation in messages and in the errors' operation field. */
    private static String describe(String name, DType dtype, int[] shape, String suffix) {
        return name + " " + dtype.mlxName() + Arrays.toString(shape).replace(" ", "") + suffix;
    }

    /** Queues an NCCL operation and waits for it; a failure aborts the communicator. */
    private void launch(Supplier<String> what, Runnable enqueue) {
        try {
            enqueue.run();
        } catch (DistributedException e) {
            throw fail(new DistributedException(who() + ": " + e.getMessage(), e, rank, what.get()));
        }
        complete(what);
    }

    /**
     * Waits until this group's stream is idle and, for a non-blocking communicator, NCCL has finished
     * enqueueing and reports no error. The deadline or an asynchronous error aborts the communicator.
     */
    private void complete(Supplier<String> lazyWhat) {
        int[] async = {NcclApi.SUCCESS};
        DistributedException[] watched = {null};
        Liveness watch = liveness;
        boolean done;
        try {
            done = NcclProgress.await(deadline, () -> {
                // the watch's verdict first: a lost peer ends the wait within JDIST_HEARTBEAT, not at the deadline
                if (watch != null && (watched[0] = watch.failure()) != null) return true;
                if (nonblocking) {
                    async[0] = nccl.asyncError(comm);
                    if (async[0] == NcclApi.IN_PROGRESS) return false;
                    if (async[0] != NcclApi.SUCCESS) return true;
                }
                return cuda.streamIdle(stream);
            });
        } catch (DistributedException e) {
            String what = lazyWhat.get();
            throw fail(new DistributedException(who() + ": " + what + ": " + e.getMessage(), e, rank, what));
        }
        if (watched[0] != null) throw fail(watched[0]);
        if (done && async[0] == NcclApi.SUCCESS) return;
        String what = lazyWhat.get();
        if (async[0] != NcclApi.SUCCESS && async[0] != NcclApi.IN_PROGRESS) {
            throw fail(NcclProgress.asyncFailure(nccl, comm, async[0], rank, what, who()));
        }
        if (!done) {
            throw fail(new DeadlineExceededException(who() + ": " + what + " did not complete within "
                    + NcclProgress.seconds(deadline) + " (JDIST_TIMEOUT): a rank of the group is stopped, has died, is much "
                    + "slower than this one, or called a different operation. jdist aborted the communicator "
                    + "(ncclCommAbort); form a new group to continue, or raise JDIST_TIMEOUT if a rank legitimately "
                    + "takes longer between operations", null, rank, what, deadline));
        }
    }

    /**
     * Every member is jdist and the job's liveness watch runs (docs/reliability.md): a wait for the stream ends, and the
     * communicator is aborted, as soon as the watch reports a lost or stopped peer or a failure elsewhere; a slow peer is
     * waited for up to the watch's progress deadline.
     */
    @Override
    public void useLiveness(Liveness watch) {
        this.deadline = watch.progressDeadline();
        this.liveness = watch;
    }

    /** Aborts the communicator (bounded), marks the group unusable and returns {@code e} for the caller to throw. */
    private DistributedException fail(DistributedException e) {
        if (broken == null) broken = e;
        MemorySegment c = comm;
        comm = MemorySegment.NULL;
        NcclProgress.abort(nccl, c, who());
        return e;
    }

    private void ensureStaging(long sendBytes, long recvBytes) {
        if (sendBytes > sendCap || sendBuf.equals(MemorySegment.NULL)) {
            if (!sendBuf.equals(MemorySegment.NULL)) cuda.free(sendBuf);
            sendBuf = MemorySegment.NULL;
            sendCap = 0;
            long cap = roundUp(sendBytes);
            sendBuf = cuda.malloc(cap);
            sendCap = cap;
        }
        if (recvBytes > recvCap || recvBuf.equals(MemorySegment.NULL)) {
            if (!recvBuf.equals(MemorySegment.NULL)) cuda.free(recvBuf);
            recvBuf = MemorySegment.NULL;
            recvCap = 0;
            long cap = roundUp(recvBytes);
            recvBuf = cuda.malloc(cap);
            recvCap = cap;
        }
    }

    private static long roundUp(long bytes) {
        long min = 4096;
        return bytes <= min ? min : ((bytes + min - 1) / min) * min;
    }

    // ------------------------------------------------------------------------------------ device arrays

    /** A new, uninitialised device array on this group's GPU. */
    public DeviceArray allocate(DType dtype, int... shape) {
        return new DeviceArray(cuda, device, dtype, shape);
    }

    /** A new device array on this group's GPU holding a copy of {@code host}. */
    public DeviceArray toDevice(Array host) {
        DeviceArray d = allocate(host.dtype(), host.shape());
        try {
            d.copyFrom(host);
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
        return d;
    }

    public DeviceArray allSum(DeviceArray x) { return allReduce(x, ReduceOp.SUM); }

    public DeviceArray allMax(DeviceArray x) { return allReduce(x, ReduceOp.MAX); }

    public DeviceArray allMin(DeviceArray x) { return allReduce(x, ReduceOp.MIN); }

    /** Element-wise reduction over ranks into a new device array of {@code x}'s dtype and shape. */
    public DeviceArray allReduce(DeviceArray x, ReduceOp op) {
        NcclTypes.dataType(x.dtype(), opName(op));
        DeviceArray out = allocate(x.dtype(), x.shape());
        return fillOrClose(out, () -> allReduce(x, out, op));
    }

    /** Element-wise reduction over ranks of {@code in} into {@code out} (same dtype and size; may be {@code in}). */
    public void allReduce(DeviceArray in, DeviceArray out, ReduceOp op) {
        int type = NcclTypes.dataType(in.dtype(), opName(op));
        checkSame(in, out, in.size(), opName(op));
        int redOp = NcclTypes.redOp(op);
        onDevice(in, out, opName(op),
                () -> nccl.allReduce(in.devicePointer(), out.devicePointer(), in.size(), type, redOp, comm, stream));
    }

    /** Every rank's {@code x} concatenated along axis 0 ({@code [n]} for a 0-d {@code x}) in a new device array. */
    public DeviceArray allGather(DeviceArray x) {
        int type = NcclTypes.dataType(x.dtype(), "all_gather");
        int[] shape = x.shape();
        int[] outShape;
        if (shape.length == 0) {
            outShape = new int[] {size};
        } else {
            outShape = shape.clone();
            outShape[0] = Math.multiplyExact(shape[0], size);
        }
        DeviceArray out = allocate(x.dtype(), outShape);
        return fillOrClose(out, () -> onDevice(x, out, "all_gather",
                () -> nccl.allGather(x.devicePointer(), out.devicePointer(), x.size(), type, comm, stream)));
    }

    /** Rows {@code [r*d0/n, (r+1)*d0/n)} of the element-wise sum over ranks, in a new device array. */
    public DeviceArray sumScatter(DeviceArray x) {
        int type = NcclTypes.dataType(x.dtype(), "sum_scatter");
        if (x.ndim() == 0 || x.shape()[0] % size != 0) {
            throw new IllegalArgumentException("sum_scatter needs an input with at least one axis whose first dimension "
                    + "divides by the group size " + size + "; got shape " + Arrays.toString(x.shape()));
        }
        int[] outShape = x.shape();
        outShape[0] /= size;
        DeviceArray out = allocate(x.dtype(), outShape);
        return fillOrClose(out, () -> onDevice(x, out, "sum_scatter",
                () -> nccl.reduceScatter(x.devicePointer(), out.devicePointer(), out.size(), type, NcclApi.SUM, comm, stream)));
    }

    private static DeviceArray fillOrClose(DeviceArray out, Runnable fill) {
        try {
            fill.run();
            return out;
        } catch (RuntimeException e) {
            out.close();
            throw e;
        }
    }

    private void checkSame(DeviceArray in, DeviceArray out, long outElements, String op) {
        if (out.dtype() != in.dtype() || out.size() != outElements) {
            throw new IllegalArgumentException(op + ": output " + out + " must be " + in.dtype() + " with " + outElements
                    + " elements to match input " + in);
        }
    }

    private void onDevice(DeviceArray in, DeviceArray out, String name, Runnable op) {
        for (DeviceArray d : new DeviceArray[] {in, out}) {
            d.checkOpen();
            if (d.device() != device || d.cuda() != cuda) {
                throw new IllegalArgumentException(d + " is not on this group's device cuda:" + device
                        + "; copy it with toDevice(array.toHost())");
            }
        }
        lock.lock();
        try {
            checkUsable();
            if (in.nbytes() == 0 && out.nbytes() == 0) return;
            cuda.setDevice(device);
            launch(() -> describe(name, in.dtype(), in.shape(), " (device arrays)"), op);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------ lifecycle

    private String who() {
        return "nccl rank " + rank + " of " + size + " (cuda:" + device + ")";
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("this nccl group is closed");
    }

    /** Open and not aborted. */
    private void checkUsable() {
        checkOpen();
        if (broken != null) {
            throw new DistributedException(who() + ": this group's communicator was aborted after an earlier failure ("
                    + broken.getMessage() + "); form a new group to continue", broken, rank, null);
        }
    }

    /**
     * Ends the communicator (non-blocking: {@code ncclCommFinalize}, waited for within the deadline, then
     * {@code ncclCommDestroy}; one that does not finish in time is aborted), frees the staging buffers and the
     * stream. After a failure the communicator is already aborted, and this returns at once.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) return;
            closed = true;
            RuntimeException first = null;
            try {
                cuda.setDevice(device);
            } catch (RuntimeException e) {
                first = e;
            }
            try {
                if (!comm.equals(MemorySegment.NULL)) endCommunicator();
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
            for (MemorySegment buf : new MemorySegment[] {sendBuf, recvBuf}) {
                if (buf.equals(MemorySegment.NULL)) continue;
                try {
                    cuda.free(buf);
                } catch (RuntimeException e) {
                    if (first == null) first = e;
                }
            }
            try {
                cuda.streamDestroy(stream);
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
            sendBuf = recvBuf = comm = stream = MemorySegment.NULL;
            if (first != null) throw first;
        } finally {
            lock.unlock();
        }
    }

    private void endCommunicator() {
        MemorySegment c = comm;
        comm = MemorySegment.NULL;
        if (!nonblocking) {
            nccl.commDestroy(c);
            return;
        }
        int[] async = {NcclApi.IN_PROGRESS};
        boolean done;
        try {
            nccl.commFinalize(c);
            done = NcclProgress.await(deadline, () -> (async[0] = nccl.asyncError(c)) != NcclApi.IN_PROGRESS);
        } catch (RuntimeException e) {
            NcclProgress.abort(nccl, c, who());
            throw e;
        }
        if (!done) {
            NcclProgress.abort(nccl, c, who());
            throw new DeadlineExceededException(who() + ": close (ncclCommFinalize) did not complete within "
                    + NcclProgress.seconds(deadline) + " (JDIST_TIMEOUT): a rank of the group stopped or died before it "
                    + "closed; jdist aborted the communicator", null, rank, "close", deadline);
        }
        if (async[0] != NcclApi.SUCCESS) {
            DistributedException e = NcclProgress.asyncFailure(nccl, c, async[0], rank, "close", who());
            NcclProgress.abort(nccl, c, who());
            throw e;
        }
        nccl.commDestroy(c);
    }

    private static String opName(ReduceOp op) {
        return switch (op) {
            case SUM -> "all_sum";
            case MAX -> "all_max";
            case MIN -> "all_min";
        };
    }

    @Override
    public String toString() {
        return "NcclGroup(rank " + rank + " of " + size + ", cuda:" + device + ")";
    }
}
