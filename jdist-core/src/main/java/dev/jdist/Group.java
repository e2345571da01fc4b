package dev.jdist;

import dev.jdist.liveness.LivenessMonitor;
import dev.jdist.liveness.LivenessSettings;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobTable;

import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A process group: what {@link Distributed#init()} returns. Validates arguments, allocates outputs,
 * treats size-1 groups as MLX does (collectives return their input), and runs one operation at a
 * time in the order the operations were issued, sync and async alike.
 */
public final class Group implements AutoCloseable {

    private final GroupImpl impl;          // null for the singleton
    private final OperationQueue queue;
    private final OperationTrace trace;
    private final JobTable jobTable;       // null when the members are not known to be jdist
    private final AutoCloseable attached;  // closed after impl (the rendezvous store), or null
    private LivenessMonitor monitor;       // the job's liveness watch: set by watchMembers or inherited by a split; or null
    private boolean ownsMonitor;           // the world group closes it

    /** A group over {@code impl}; {@code label} names it in trace events ({@link OperationTrace#WORLD} or a split's label). */
    Group(GroupImpl impl, String label) {
        this(impl, label, null, null);
    }

    /** As {@link #Group(GroupImpl, String)}, with the members' rendezvous records and what to close after {@code impl}. */
    Group(GroupImpl impl, String label, JobTable jobTable, AutoCloseable attached) {
        this.impl = impl;
        this.jobTable = jobTable;
        this.attached = attached;
        this.trace = impl == null ? new OperationTrace(label, "singleton", 0, 1)
                : new OperationTrace(label, impl.backendName(), impl.rank(), impl.size());
        this.queue = new OperationQueue(impl == null ? "singleton" : impl.backendName() + " rank " + impl.rank(), trace);
    }

    /** The 1-rank group returned when nothing is configured. */
    static Group singleton() {
        return new Group(null, OperationTrace.WORLD);
    }

    public int rank() { return impl == null ? 0 : impl.rank(); }

    public int size() { return impl == null ? 1 : impl.size(); }

    /** The backend behind this group ({@code "singleton"} for the 1-rank group). */
    public String backend() { return impl == null ? "singleton" : impl.backendName(); }

    /** Splits by colour, ordering each new group by {@link #rank()} (key = parent rank). */
    public Group split(int color) { return split(color, -1); }

    /**
     * Collective: members with the same {@code color} form a new group ordered by ascending
     * {@code key}, ties broken by parent rank; a negative key means "my parent rank".
     */
    public Group split(int color, int key) {
        if (color < 0) throw new IllegalArgumentException("split colour must be >= 0, got " + color);
        if (impl == null) throw new UnsupportedCollectiveException("cannot split the singleton group further");
        int effectiveKey = key < 0 ? rank() : key;
        String[] label = new String[1];
        GroupImpl child = queue.run(OperationTrace.Kind.SPLIT, null, null, 0, -1, () -> {
            label[0] = OperationTrace.splitLabel(trace.group(), queue.currentSequence(), color);
            return impl.split(color, effectiveKey);
        });
        Group g = new Group(child, label[0]);
        LivenessMonitor m = monitor;
        if (m != null && child.size() > 1) {
            // a split's members are the job's: the same watch ends it, and its operations are compared too
            if (m.watching()) child.useLiveness(m.forSplit());
            g.monitor = m;
            g.queue.watch(new GroupWatch(m, child, null));
        }
        return g;
    }

    public Array allSum(Array x) { return allReduce(x, ReduceOp.SUM); }

    public Array allMax(Array x) { return allReduce(x, ReduceOp.MAX); }

    public Array allMin(Array x) { return allReduce(x, ReduceOp.MIN); }

    public CompletableFuture<Array> allSumAsync(Array x) { return allReduceAsync(x, ReduceOp.SUM); }

    public CompletableFuture<Array> allMaxAsync(Array x) { return allReduceAsync(x, ReduceOp.MAX); }

    public CompletableFuture<Array> allMinAsync(Array x) { return allReduceAsync(x, ReduceOp.MIN); }

    public Array allReduce(Array x, ReduceOp op) {
        return size() == 1 ? x : queue.run(OperationTrace.Kind.of(op), x.dtype(), x.shapeView(), x.nbytes(), -1, () -> doAllReduceNow(x, op));
    }

    public CompletableFuture<Array> allReduceAsync(Array x, ReduceOp op) {
        if (size() == 1) return CompletableFuture.completedFuture(x);
        return queue.submit(OperationTrace.Kind.of(op), x.dtype(), x.shapeView(), x.nbytes(), -1, () -> doAllReduceNow(x, op));
    }

    private Array doAllReduceNow(Array x, ReduceOp op) {
        Array out = Array.uninitialized(x.dtype(), x.shape());   // the backend writes every byte
        impl.allReduce(x, out, op);
        return out;
    }

    /** Concatenates every rank's {@code x} along axis 0 (a 0-d input gives shape {@code [n]}). */
    public Array allGather(Array x) {
        return size() == 1 ? x : queue.run(OperationTrace.Kind.ALL_GATHER, x.dtype(), x.shapeView(), x.nbytes(), -1, () -> doAllGatherNow(x));
    }

    public CompletableFuture<Array> allGatherAsync(Array x) {
        if (size() == 1) return CompletableFuture.completedFuture(x);
        return queue.submit(OperationTrace.Kind.ALL_GATHER, x.dtype(), x.shapeView(), x.nbytes(), -1, () -> doAllGatherNow(x));
    }

    private Array doAllGatherNow(Array x) {
        int[] shape = x.shape();
        int[] outShape;
        if (shape.length == 0) {
            outShape = new int[] {size()};
        } else {
            outShape = shape.clone();
            outShape[0] = Math.multiplyExact(shape[0], size());
        }
        Array out = Array.uninitialized(x.dtype(), outShape);
        impl.allGather(x, out);
        return out;
    }

    /** Element-wise sum over ranks, of which rank r keeps rows {@code [r*d0/n, (r+1)*d0/n)}. */
    public Array sumScatter(Array x) {
        if (size() == 1) return x;
        checkScatter(x);
        return queue.run(OperationTrace.Kind.SUM_SCATTER, x.dtype(), x.shapeView(), x.nbytes(), -1, () -> doSumScatterNow(x));
    }

    public CompletableFuture<Array> sumScatterAsync(Array x) {
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkScatter(x);
        return queue.submit(OperationTrace.Kind.SUM_SCATTER, x.dtype(), x.shapeView(), x.nbytes(), -1, () -> doSumScatterNow(x));
    }

    private Array checkScatter(Array x) {
        if (x.ndim() == 0) {
            throw new IllegalArgumentException("sum_scatter needs an input with at least one axis; got a 0-d array "
                    + "(shape []) on a group of size " + size() + ". Reshape it to [" + size() + ", ...] first.");
        }
        if (x.shape(0) % size() != 0) {
            throw new IllegalArgumentException("sum_scatter splits axis 0 into " + size() + " equal parts (the group size), "
                    + "but the input has shape " + Arrays.toString(x.shape()) + " and " + x.shape(0) + " is not divisible by "
                    + size());
        }
        return x;
    }

    private Array doSumScatterNow(Array x) {
        int[] outShape = x.shape();
        outShape[0] /= size();
        Array out = Array.uninitialized(x.dtype(), outShape);
        impl.sumScatter(x, out);
        return out;
    }

    /**
     * all_sum/all_max/all_min written into {@code out} (same dtype and element count as {@code x};
     * may be {@code x} itself for an in-place reduction). No allocation: for loops that reuse buffers.
     */
    public Array allReduceInto(Array x, Array out, ReduceOp op) {
        checkInto("allReduceInto", x, out, x.nbytes());
        if (size() == 1) return copyInto(x, out);
        return queue.run(OperationTrace.Kind.of(op), x.dtype(), x.shapeView(), x.nbytes(), -1, () -> { impl.allReduce(x, out, op); return out; });
    }

    /** all_gather written into {@code out}, which holds {@code size()} times the bytes of {@code x}. */
    public Array allGatherInto(Array x, Array out) {
        checkInto("allGatherInto", x, out, Math.multiplyExact(x.nbytes(), (long) size()));
        if (size() == 1) return copyInto(x, out);
        return queue.run(OperationTrace.Kind.ALL_GATHER, x.dtype(), x.shapeView(), x.nbytes(), -1, () -> { impl.allGather(x, out); return out; });
    }

    /** sum_scatter written into {@code out}, which holds one {@code size()}-th of the bytes of {@code x}. */
    public Array sumScatterInto(Array x, Array out) {
        if (x.nbytes() % size() != 0) {
            throw new IllegalArgumentException("sumScatterInto: input of " + x.nbytes() + " bytes does not divide into "
                    + size() + " equal chunks");
        }
        checkInto("sumScatterInto", x, out, x.nbytes() / size());
        if (size() == 1) return copyInto(x, out);
        return queue.run(OperationTrace.Kind.SUM_SCATTER, x.dtype(), x.shapeView(), x.nbytes(), -1, () -> { impl.sumScatter(x, out); return out; });
    }

    /** Receives from {@code src} into {@code out} (its byte count must equal the sender's). */
    public Array recvInto(Array out, int src) {
        checkPeer("recv from", src);
        return queue.run(OperationTrace.Kind.RECV, out.dtype(), out.shapeView(), out.nbytes(), src, () -> { impl.recv(out, src); return out; });
    }

    private static void checkInto(String what, Array x, Array out, long expectedBytes) {
        if (out.dtype() != x.dtype() || out.nbytes() != expectedBytes) {
            throw new IllegalArgumentException(what + ": output must be " + x.dtype() + " with " + expectedBytes
                    + " bytes, got " + out.dtype() + " with " + out.nbytes() + " bytes");
        }
    }

    private static Array copyInto(Array x, Array out) {
        if (out != x) java.lang.foreign.MemorySegment.copy(x.segment(), 0, out.segment(), 0, x.nbytes());
        return out;
    }

    /** Sends {@code x} to rank {@code dst}; returns {@code x}. */
    public Array send(Array x, int dst) {
        checkPeer("send to", dst);
        return queue.run(OperationTrace.Kind.SEND, x.dtype(), x.shapeView(), x.nbytes(), dst, () -> { impl.send(x, dst); return x; });
    }

    public CompletableFuture<Array> sendAsync(Array x, int dst) {
        checkPeer("send to", dst);
        return queue.submit(OperationTrace.Kind.SEND, x.dtype(), x.shapeView(), x.nbytes(), dst, () -> { impl.send(x, dst); return x; });
    }

    /** Receives an array of {@code shape}/{@code dtype} from rank {@code src}. */
    public Array recv(int[] shape, DType dtype, int src) {
        checkRecv(shape, dtype);
        checkPeer("recv from", src);
        return queue.run(OperationTrace.Kind.RECV, dtype, shape.clone(), recvBytes(shape, dtype), src, () -> doRecvNow(shape, dtype, src));
    }

    public CompletableFuture<Array> recvAsync(int[] shape, DType dtype, int src) {
        checkRecv(shape, dtype);
        checkPeer("recv from", src);
        return queue.submit(OperationTrace.Kind.RECV, dtype, shape.clone(), recvBytes(shape, dtype), src, () -> doRecvNow(shape, dtype, src));
    }

    /** {@code recv(like.shape(), like.dtype(), src)}. */
    public Array recvLike(Array like, int src) { return recv(like.shape(), like.dtype(), src); }

    public CompletableFuture<Array> recvLikeAsync(Array like, int src) { return recvAsync(like.shape(), like.dtype(), src); }

    private static void checkRecv(int[] shape, DType dtype) {
        if (shape == null || dtype == null) throw new IllegalArgumentException("recv needs a shape and a dtype, got "
                + (shape == null ? "no shape" : Arrays.toString(shape)) + " and " + dtype);
        Array.elementCount(shape);   // rejects negative dimensions, naming the shape
    }

    private static long recvBytes(int[] shape, DType dtype) { return Math.multiplyExact(Array.elementCount(shape), (long) dtype.itemSize()); }

    private Array doRecvNow(int[] shape, DType dtype, int src) {
        Array out = Array.uninitialized(dtype, shape);
        impl.recv(out, src);
        return out;
    }

    /** docs/reference/collectives.md §2.5/§2.6: at call time; any size-1 group (singleton or a 1-member split) has no peer. */
    private void checkPeer(String what, int peer) {
        if (size() == 1) throw new IllegalArgumentException("cannot " + what + " a singleton group (size 1)");
        if (peer < 0 || peer >= size()) {
            throw new IllegalArgumentException("cannot " + what + " rank " + peer + ": the group has size " + size()
                    + " (valid ranks 0.." + (size() - 1) + ")");
        }
    }

    /** The backend implementation (for backends' own tests and for jdist's nn helpers). */
    public GroupImpl impl() { return impl; }

    /**
     * jdist-internal (heartbeats, connections between any two ranks, algorithm choices): every member's published
     * record (address, ports, versions, capabilities) when every member is known to be jdist — the job met through a
     * rendezvous, or formed from MLX variables with a job token; empty otherwise (MLX peers may be present) and for
     * groups made by {@link #split}.
     */
    public Optional<JobTable> jobTable() { return Optional.ofNullable(jobTable); }

    /**
     * Starts the job's liveness watch and mismatch check (docs/reliability.md) for a group whose members are all jdist
     * ({@link #jobTable()} present): every rank contributes its watch's record to an all-gather over the group (not an
     * operation of the group: it has no sequence number), the ranks check that they agree on {@code JDIST_HEARTBEAT} and
     * {@code JDIST_DEBUG}, and the backend gets the watch. Called once by {@link Distributed}, before the program sees the
     * group; does nothing for groups that may hold MLX peers.
     */
    void watchMembers(Map<String, String> env) {
        if (impl == null || jobTable == null || impl.size() < 2) return;
        LivenessSettings settings = LivenessSettings.fromEnvironment(env);
        LivenessMonitor m = LivenessMonitor.open(impl.rank(), jobTable, settings, queue, env.get("JDIST_JOB_TOKEN"));
        try {
            byte[] mine = m.record();
            Array all = Array.zeros(DType.UINT8, LivenessMonitor.RECORD_BYTES * impl.size());
            impl.allGather(Array.fromBytes(DType.UINT8, mine, mine.length), all);
            m.start(all.toBytes());
            if (m.watching()) impl.useLiveness(m);
        } catch (RuntimeException | Error e) {
            m.close();
            throw e;
        }
        monitor = m;
        ownsMonitor = true;
        queue.watch(new GroupWatch(m, impl, jobTable));
    }

    /** The job's liveness watch, or null (tests). */
    dev.jdist.liveness.LivenessMonitor monitorForTesting() { return monitor; }

    @Override
    public void close() {
        queue.close();   // operations not yet started will not reach the backend
        try {
            // the watch says goodbye before the connections close, so that no peer takes this rank's end for a failure
            if (ownsMonitor) monitor.close();
            // closing the backend ends a running operation (its sockets close, native backends abort and wait for it)
            if (impl != null) impl.close();
            queue.awaitFinished();
            trace.close();
        } finally {
            if (attached != null) {
                try {
                    attached.close();
                } catch (Exception ignored) {
                    // the rendezvous store: closing is best effort
                }
            }
        }
    }
}
