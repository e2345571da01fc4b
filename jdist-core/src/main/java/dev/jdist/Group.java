package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.liveness.GroupWatch;
import dev.jdist.liveness.LivenessMonitor;
import dev.jdist.liveness.LivenessSettings;
import dev.jdist.spi.GroupAccess;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.JobToken;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

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
    /** Every member is known to be jdist: the group has a job table, or was split from a group whose members are. */
    private final boolean membersJdist;
    private LivenessMonitor monitor;       // the job's liveness watch: set by watchMembers or inherited by a split; or null
    private boolean ownsMonitor;           // the world group closes it

    /** A group over {@code impl}; {@code label} names it in trace events ({@link OperationTrace#WORLD} or a split's label). */
    Group(GroupImpl impl, String label) {
        this(impl, label, null, null);
    }

    /** As {@link #Group(GroupImpl, String)}, with the members' rendezvous records and what to close after {@code impl}. */
    Group(GroupImpl impl, String label, JobTable jobTable, AutoCloseable attached) {
        this(impl, label, jobTable, attached, jobTable != null);
    }

    private Group(GroupImpl impl, String label, JobTable jobTable, AutoCloseable attached, boolean membersJdist) {
        this.impl = impl;
        this.jobTable = jobTable;
        this.attached = attached;
        this.membersJdist = membersJdist;
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
        LivenessMonitor m = monitor;
        int[][] members = new int[1][];
        GroupImpl child = queue.run(OperationTrace.Kind.SPLIT, null, null, 0, -1, () -> {
            label[0] = OperationTrace.splitLabel(trace.group(), queue.currentSequence(), color);
            GroupImpl made = impl.split(color, effectiveKey);
            // the heartbeats name a split's members by job rank: each member learns the others' (part of split itself)
            if (m != null && m.watching() && made.size() > 1) members[0] = jobRanks(made, m.rank());
            return made;
        });
        Group g = new Group(child, label[0], null, null, membersJdist);   // a split of jdist ranks holds jdist ranks
        if (m != null && child.size() > 1) {
            // a split's members are the job's: the same watch ends it, and its operations are compared too
            if (m.watching()) {
                child.useLiveness(m.forSplit());
                m.watchSplit(label[0], members[0], g.queue);
            }
            g.monitor = m;
            g.queue.watch(new GroupWatch(m, child, null));
        }
        return g;
    }

    /** Every member's job rank, by rank in {@code group}: an all-gather over it. */
    private static int[] jobRanks(GroupImpl group, int jobRank) {
        Array all = Array.zeros(DType.INT32, group.size());
        group.allGather(Array.fromInts(new int[] {jobRank}, 1), all);
        int[] ranks = new int[group.size()];
        for (int i = 0; i < ranks.length; i++) ranks[i] = (int) all.getLong(i);
        return ranks;
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
        if (out != x) MemorySegment.copy(x.segment(), 0, out.segment(), 0, x.nbytes());
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

    /**
     * docs/reference/collectives.md §2.5/§2.6: at call time; any size-1 group (singleton or a 1-member split) has no
     * peer. With MLX peers possible (§13.1 there), send/recv keep MLX's rules (the ring: neighbours only).
     */
    private void checkPeer(String what, int peer) {
        checkPeerRank(what, peer);
        if (impl.mlxWire()) {
            String rule = impl.beyondMlxPointToPoint(peer);
            if (rule != null && !membersJdist) {
                throw new IllegalArgumentException("rank " + rank() + " cannot " + what + " rank " + peer + ": " + rule
                        + ". Sending to any rank is not supported with MLX peers in the group; " + jdistMembersHint());
            }
            String limited = rule == null ? null : impl.jdistReachLimited();
            if (limited != null) {
                throw new IllegalArgumentException("rank " + rank() + " cannot " + what + " rank " + peer + ": " + rule + ", "
                        + "because " + limited);
            }
        }
    }

    private void checkPeerRank(String what, int peer) {
        if (size() == 1) throw new IllegalArgumentException("cannot " + what + " a singleton group (size 1)");
        if (peer < 0 || peer >= size()) {
            throw new IllegalArgumentException("cannot " + what + " rank " + peer + ": the group has size " + size()
                    + " (valid ranks 0.." + (size() - 1) + ")");
        }
        if (peer == rank()) {
            throw new IllegalArgumentException("rank " + rank() + " cannot " + what + " itself; copy the array instead");
        }
    }

    // ------------------------------------------------------------------ the operations MLX lacks (docs/reference/collectives.md §13)

    /**
     * Rank {@code root}'s {@code x} on every rank (§13.2): the root gets {@code x} itself back, every other rank a new
     * array holding the root's bytes. Every rank passes an array of the root's dtype and shape; only the root's bytes
     * are read.
     */
    public Array broadcast(Array x, int root) {
        checkRoot("broadcast", root);
        if (size() == 1) return x;
        checkJdistOperation("broadcast");
        return queue.run(OperationTrace.Kind.BROADCAST, x.dtype(), x.shape(), x.nbytes(), root, () -> doBroadcastNow(x, root));
    }

    public CompletableFuture<Array> broadcastAsync(Array x, int root) {
        checkRoot("broadcast", root);
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkJdistOperation("broadcast");
        return queue.submit(OperationTrace.Kind.BROADCAST, x.dtype(), x.shape(), x.nbytes(), root, () -> doBroadcastNow(x, root));
    }

    private Array doBroadcastNow(Array x, int root) {
        if (rank() == root) {
            impl.broadcast(x, root);
            return x;
        }
        Array out = Array.uninitialized(x.dtype(), x.shape());
        impl.broadcast(out, root);
        return out;
    }

    /**
     * Broadcast in place, without allocation: the root's {@code buffer} is sent and every other rank's {@code buffer}
     * (of the root's dtype and byte count) is overwritten with it. Returns {@code buffer}.
     */
    public Array broadcastInto(Array buffer, int root) {
        checkRoot("broadcast", root);
        if (size() == 1) return buffer;
        checkJdistOperation("broadcast");
        return queue.run(OperationTrace.Kind.BROADCAST, buffer.dtype(), buffer.shape(), buffer.nbytes(), root, () -> {
            impl.broadcast(buffer, root);
            return buffer;
        });
    }

    /** Returns once every member of the group has called it (§13.3). */
    public void barrier() {
        if (size() == 1) return;
        checkJdistMembers("barrier");   // built on all_sum: the ring runs it without direct connections
        queue.run(OperationTrace.Kind.BARRIER, null, null, 0, -1, () -> {
            impl.barrier();
            return null;
        });
    }

    public CompletableFuture<Void> barrierAsync() {
        if (size() == 1) return CompletableFuture.completedFuture(null);
        checkJdistMembers("barrier");   // built on all_sum: the ring runs it without direct connections
        return queue.submit(OperationTrace.Kind.BARRIER, null, null, 0, -1, () -> {
            impl.barrier();
            return null;
        });
    }

    /**
     * All-to-all (§13.4): axis 0 of {@code x} is cut into {@code size()} equal blocks, block j goes to rank j; the result
     * has {@code x}'s shape and holds, at block q, what rank q sent to this rank. Every rank passes the same shape.
     */
    public Array allToAll(Array x) {
        if (size() == 1) return x;
        checkBlocks("all_to_all", x);
        checkJdistOperation("all_to_all");
        return queue.run(OperationTrace.Kind.ALL_TO_ALL, x.dtype(), x.shape(), x.nbytes(), -1, () -> doAllToAllNow(x));
    }

    public CompletableFuture<Array> allToAllAsync(Array x) {
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkBlocks("all_to_all", x);
        checkJdistOperation("all_to_all");
        return queue.submit(OperationTrace.Kind.ALL_TO_ALL, x.dtype(), x.shape(), x.nbytes(), -1, () -> doAllToAllNow(x));
    }

    private Array doAllToAllNow(Array x) {
        Array out = Array.uninitialized(x.dtype(), x.shape());
        impl.allToAll(x, out);
        return out;
    }

    /** all_to_all written into {@code out}: {@code x}'s dtype and byte count, other memory than {@code x}. */
    public Array allToAllInto(Array x, Array out) {
        if (x.size() % size() != 0) {
            throw new IllegalArgumentException("allToAllInto: " + x.size() + " elements do not divide into " + size()
                    + " equal blocks (the group size)");
        }
        checkInto("allToAllInto", x, out, x.nbytes());
        checkDistinct("allToAllInto", x, out);
        if (size() == 1) return copyInto(x, out);
        checkJdistOperation("all_to_all");
        return queue.run(OperationTrace.Kind.ALL_TO_ALL, x.dtype(), x.shape(), x.nbytes(), -1, () -> {
            impl.allToAll(x, out);
            return out;
        });
    }

    /**
     * All-to-all with blocks of any size (§13.4): the first {@code sendSplits[0]} rows (along axis 0) of {@code x} go to
     * rank 0, the next {@code sendSplits[1]} to rank 1, and so on; {@code recvSplits[q]} rows come from rank q (what
     * rank q's {@code sendSplits} gives this rank). The result has shape {@code [sum(recvSplits), d1, ...]}, the rows
     * from rank 0 first.
     */
    public Array allToAllV(Array x, int[] sendSplits, int[] recvSplits) {
        long[] sendCounts = splitCounts("all_to_all_v", x, sendSplits, "sendSplits", true);
        long[] recvCounts = splitCounts("all_to_all_v", x, recvSplits, "recvSplits", false);
        if (size() == 1) return x;
        checkJdistOperation("all_to_all_v");
        return queue.run(OperationTrace.Kind.ALL_TO_ALL_V, x.dtype(), x.shape(), x.nbytes(), -1,
                () -> doAllToAllVNow(x, sendCounts, recvSplits, recvCounts));
    }

    public CompletableFuture<Array> allToAllVAsync(Array x, int[] sendSplits, int[] recvSplits) {
        long[] sendCounts = splitCounts("all_to_all_v", x, sendSplits, "sendSplits", true);
        long[] recvCounts = splitCounts("all_to_all_v", x, recvSplits, "recvSplits", false);
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkJdistOperation("all_to_all_v");
        return queue.submit(OperationTrace.Kind.ALL_TO_ALL_V, x.dtype(), x.shape(), x.nbytes(), -1,
                () -> doAllToAllVNow(x, sendCounts, recvSplits, recvCounts));
    }

    /**
     * As {@link #allToAllV(Array, int[], int[])} when the receiving sizes are not known in advance: the ranks first
     * exchange their {@code sendSplits} (an all_to_all of one int64 per rank, inside the same operation).
     */
    public Array allToAllV(Array x, int[] sendSplits) {
        long[] sendCounts = splitCounts("all_to_all_v", x, sendSplits, "sendSplits", true);
        if (size() == 1) return x;
        checkJdistOperation("all_to_all_v");
        return queue.run(OperationTrace.Kind.ALL_TO_ALL_V, x.dtype(), x.shape(), x.nbytes(), -1,
                () -> doAllToAllVExchangingNow(x, sendSplits, sendCounts));
    }

    public CompletableFuture<Array> allToAllVAsync(Array x, int[] sendSplits) {
        long[] sendCounts = splitCounts("all_to_all_v", x, sendSplits, "sendSplits", true);
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkJdistOperation("all_to_all_v");
        return queue.submit(OperationTrace.Kind.ALL_TO_ALL_V, x.dtype(), x.shape(), x.nbytes(), -1,
                () -> doAllToAllVExchangingNow(x, sendSplits, sendCounts));
    }

    private Array doAllToAllVExchangingNow(Array x, int[] sendSplits, long[] sendCounts) {
        Array mine = Array.uninitialized(DType.INT64, size());
        for (int q = 0; q < size(); q++) mine.setLong(q, sendSplits[q]);
        Array theirs = Array.uninitialized(DType.INT64, size());
        impl.allToAll(mine, theirs);
        int[] recvSplits = new int[size()];
        for (int q = 0; q < size(); q++) {
            long rows = theirs.getLong(q);
            if (rows < 0 || rows > Integer.MAX_VALUE) {
                throw new IllegalStateException("all_to_all_v: rank " + q + " announced " + rows + " rows for rank " + rank()
                        + "; every rank must pass valid sendSplits");
            }
            recvSplits[q] = (int) rows;
        }
        long[] recvCounts = splitCounts("all_to_all_v", x, recvSplits, "the rows the other ranks announced", false);
        return doAllToAllVNow(x, sendCounts, recvSplits, recvCounts);
    }

    private Array doAllToAllVNow(Array x, long[] sendCounts, int[] recvSplits, long[] recvCounts) {
        int[] outShape = x.ndim() == 0 ? new int[] {0} : x.shape();
        long rows = 0;
        for (int r : recvSplits) rows += r;
        outShape[0] = Math.toIntExact(rows);
        Array out = Array.uninitialized(x.dtype(), outShape);
        impl.allToAllV(x, sendCounts, out, recvCounts);
        return out;
    }

    /**
     * Gathers every rank's {@code x} at {@code root} (§13.5): the root gets what {@link #allGather} would give (shape
     * {@code [n*d0, d1, ...]}, rank q's data at block q), every other rank gets {@code x} itself back.
     */
    public Array gather(Array x, int root) {
        checkRoot("gather", root);
        if (size() == 1) return x;
        checkJdistOperation("gather");
        return queue.run(OperationTrace.Kind.GATHER, x.dtype(), x.shape(), x.nbytes(), root, () -> doGatherNow(x, root));
    }

    public CompletableFuture<Array> gatherAsync(Array x, int root) {
        checkRoot("gather", root);
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkJdistOperation("gather");
        return queue.submit(OperationTrace.Kind.GATHER, x.dtype(), x.shape(), x.nbytes(), root, () -> doGatherNow(x, root));
    }

    private Array doGatherNow(Array x, int root) {
        if (rank() != root) {
            impl.gather(x, null, root);
            return x;
        }
        Array out = Array.uninitialized(x.dtype(), gatheredShape(x.shape()));
        impl.gather(x, out, root);
        return out;
    }

    /**
     * gather written into {@code out} at the root ({@code size()} times the bytes of {@code x}, its dtype); other ranks
     * may pass null. Returns {@code out} at the root and {@code x} elsewhere.
     */
    public Array gatherInto(Array x, Array out, int root) {
        checkRoot("gather", root);
        if (rank() == root) {
            if (out == null) throw new IllegalArgumentException("gatherInto: the root (rank " + root + ") needs an output array");
            checkInto("gatherInto", x, out, Math.multiplyExact(x.nbytes(), (long) size()));
            checkDistinct("gatherInto", x, out);
        }
        if (size() == 1) return copyInto(x, out);
        checkJdistOperation("gather");
        Array at = rank() == root ? out : null;
        return queue.run(OperationTrace.Kind.GATHER, x.dtype(), x.shape(), x.nbytes(), root, () -> {
            impl.gather(x, at, root);
            return at != null ? at : x;
        });
    }

    /**
     * Scatters the root's {@code x} (§13.5): axis 0 is cut into {@code size()} equal blocks and rank q gets block q, shape
     * {@code [d0/n, d1, ...]}. Every rank passes an array of the root's dtype and shape; only the root's bytes are read
     * ({@link #scatterInto} spares the other ranks that array).
     */
    public Array scatter(Array x, int root) {
        checkRoot("scatter", root);
        if (size() == 1) return x;
        checkBlocks("scatter", x);
        checkJdistOperation("scatter");
        return queue.run(OperationTrace.Kind.SCATTER, x.dtype(), x.shape(), x.nbytes(), root, () -> doScatterNow(x, root));
    }

    public CompletableFuture<Array> scatterAsync(Array x, int root) {
        checkRoot("scatter", root);
        if (size() == 1) return CompletableFuture.completedFuture(x);
        checkBlocks("scatter", x);
        checkJdistOperation("scatter");
        return queue.submit(OperationTrace.Kind.SCATTER, x.dtype(), x.shape(), x.nbytes(), root, () -> doScatterNow(x, root));
    }

    private Array doScatterNow(Array x, int root) {
        int[] outShape = x.shape();
        outShape[0] /= size();
        Array out = Array.uninitialized(x.dtype(), outShape);
        impl.scatter(rank() == root ? x : null, out, root);
        return out;
    }

    /**
     * scatter into {@code out} on every rank: the root's {@code x} holds {@code size()} times {@code out}'s bytes (same
     * dtype); the other ranks may pass null for {@code x}. Returns {@code out}.
     */
    public Array scatterInto(Array x, Array out, int root) {
        checkRoot("scatter", root);
        if (out == null) throw new IllegalArgumentException("scatterInto needs an output array on every rank");
        if (rank() == root) {
            if (x == null) throw new IllegalArgumentException("scatterInto: the root (rank " + root + ") needs the array to scatter");
            if (x.dtype() != out.dtype() || x.nbytes() != Math.multiplyExact(out.nbytes(), (long) size())) {
                throw new IllegalArgumentException("scatterInto: the root's input must be " + out.dtype() + " with "
                        + size() + " x " + out.nbytes() + " bytes (the group size times the output's), got " + x.dtype()
                        + " with " + x.nbytes() + " bytes");
            }
            checkDistinct("scatterInto", x, out);
        }
        if (size() == 1) return copyInto(x, out);
        checkJdistOperation("scatter");
        Array in = rank() == root ? x : null;
        return queue.run(OperationTrace.Kind.SCATTER, out.dtype(), out.shape(), out.nbytes(), root, () -> {
            impl.scatter(in, out, root);
            return out;
        });
    }

    /**
     * Sends and receives together (§13.6): every transfer of {@code ops} starts at once and the call returns when all
     * have completed, whatever their order, so ranks that send to each other in the same batch never wait for one
     * another. Transfers between two ranks match in order: the k-th send this rank makes to rank q (in batches and
     * single sends alike) is the k-th receive q makes from this rank. Returns the arrays of the receives, in order.
     * Every peer must be another rank of the group; an array must not be sent and received into in one batch.
     */
    public List<Array> batchSendRecv(List<PeerOp> ops) {
        List<PeerOp> batch = checkBatch(ops);
        if (batch.isEmpty()) return List.of();
        checkJdistOperation("batched send/recv");
        return queue.run(OperationTrace.Kind.BATCH_SEND_RECV, null, null, batchBytes(batch), -1, () -> doBatchNow(batch));
    }

    public CompletableFuture<List<Array>> batchSendRecvAsync(List<PeerOp> ops) {
        List<PeerOp> batch = checkBatch(ops);
        if (batch.isEmpty()) return CompletableFuture.completedFuture(List.of());
        checkJdistOperation("batched send/recv");
        return queue.submit(OperationTrace.Kind.BATCH_SEND_RECV, null, null, batchBytes(batch), -1, () -> doBatchNow(batch));
    }

    private List<PeerOp> checkBatch(List<PeerOp> ops) {
        if (ops == null) throw new IllegalArgumentException("batchSendRecv needs a list of PeerOps, got null");
        List<PeerOp> batch = List.copyOf(ops);   // rejects null elements
        for (PeerOp op : batch) checkPeerRank(op.isSend() ? "send to" : "recv from", op.peer());
        return batch;
    }

    private static long batchBytes(List<PeerOp> batch) {
        long bytes = 0;
        for (PeerOp op : batch) bytes += op.array().nbytes();
        return bytes;
    }

    private List<Array> doBatchNow(List<PeerOp> batch) {
        impl.batchSendRecv(batch);
        List<Array> received = new ArrayList<>();
        for (PeerOp op : batch) if (!op.isSend()) received.add(op.array());
        return List.copyOf(received);
    }

    // ------------------------------------------------------------------ checks of the operations MLX lacks

    private void checkRoot(String op, int root) {
        if (root < 0 || root >= size()) {
            throw new IllegalArgumentException(op + ": root " + root + " is not a rank of this group of size " + size()
                    + " (valid roots 0.." + (size() - 1) + ")");
        }
    }

    /** all_to_all and scatter cut axis 0 into {@code size()} equal blocks. */
    private void checkBlocks(String op, Array x) {
        if (x.ndim() == 0) {
            throw new IllegalArgumentException(op + " needs an input with at least one axis; got a 0-d array (shape []) on a "
                    + "group of size " + size() + ". Reshape it to [" + size() + ", ...] first.");
        }
        if (x.shape(0) % size() != 0) {
            throw new IllegalArgumentException(op + " splits axis 0 into " + size() + " equal blocks (the group size), but "
                    + "the input has shape " + Arrays.toString(x.shape()) + " and " + x.shape(0) + " is not divisible by "
                    + size());
        }
    }

    /** Row splits along axis 0 as element counts: one per rank, non-negative; the send splits add up to {@code d0}. */
    private long[] splitCounts(String op, Array x, int[] splits, String name, boolean sending) {
        if (x.ndim() == 0) {
            throw new IllegalArgumentException(op + " needs an input with at least one axis (its rows are split among the "
                    + "ranks); got a 0-d array");
        }
        if (splits == null || splits.length != size()) {
            throw new IllegalArgumentException(op + ": " + name + " needs one entry per rank (" + size() + "), got "
                    + (splits == null ? "null" : Arrays.toString(splits)));
        }
        long rowElements = x.shape(0) == 0 ? elementsPerRow(x.shape()) : x.size() / x.shape(0);
        long total = 0;
        long[] counts = new long[splits.length];
        for (int q = 0; q < splits.length; q++) {
            if (splits[q] < 0) {
                throw new IllegalArgumentException(op + ": " + name + "[" + q + "] = " + splits[q] + " is negative; "
                        + name + " = " + Arrays.toString(splits));
            }
            total += splits[q];
            counts[q] = Math.multiplyExact((long) splits[q], rowElements);
        }
        if (sending && total != x.shape(0)) {
            throw new IllegalArgumentException(op + ": " + name + " " + Arrays.toString(splits) + " add up to " + total
                    + " rows, but the input has shape " + Arrays.toString(x.shape()) + " (" + x.shape(0) + " rows)");
        }
        if (!sending && total > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(op + ": " + name + " " + Arrays.toString(splits) + " add up to " + total
                    + " rows, more than an array's axis holds");
        }
        return counts;
    }

    private static long elementsPerRow(int[] shape) {
        long e = 1;
        for (int i = 1; i < shape.length; i++) e = Math.multiplyExact(e, shape[i]);
        return e;
    }

    private int[] gatheredShape(int[] shape) {
        if (shape.length == 0) return new int[] {size()};
        int[] out = shape.clone();
        out[0] = Math.multiplyExact(shape[0], size());
        return out;
    }

    /** The outputs of all_to_all, gather and scatter are filled while the input is still being read. */
    private static void checkDistinct(String what, Array x, Array out) {
        MemorySegment a = x.segment();
        MemorySegment b = out.segment();
        boolean overlap = a.byteSize() > 0 && b.byteSize() > 0 && a.asOverlappingSlice(b).isPresent();
        if (overlap) throw new IllegalArgumentException(what + ": the output must not share memory with the input");
    }

    /** §13.1: on backends whose bytes are MLX's, the operations MLX lacks need every member to be jdist. */
    private void checkJdistMembers(String op) {
        if (impl.mlxWire() && !membersJdist) {
            throw new UnsupportedCollectiveException(op + " is not supported with MLX peers in the group: " + jdistMembersHint());
        }
    }

    /** The same, for an operation that also needs any member to reach any other (§10.1: not on a ring of cables). */
    private void checkJdistOperation(String op) {
        checkJdistMembers(op);
        String limited = impl.mlxWire() ? impl.jdistReachLimited() : null;
        if (limited != null) throw new UnsupportedCollectiveException("rank " + rank() + ": " + op + " is not supported here: " + limited);
    }

    private String jdistMembersHint() {
        return "this " + backend() + " group's members are not known to be jdist processes (it was formed from MLX's "
                + "variables without JDIST_JOB_TOKEN, or split from such a group), so MLX processes, which know only MLX's "
                + "operations, may be among them. Give every rank the same JDIST_JOB_TOKEN (jdist launch does unless "
                + "--mlx-compatible) or let the ranks meet through a rendezvous (docs/clusters.md)";
    }

    static {
        GroupAccess.register(Group::impl);
    }

    /** The backend implementation; null for the singleton. Outside this package through {@link GroupAccess} only. */
    GroupImpl impl() { return impl; }

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
        watchMembers(env, mine -> {
            Array all = Array.zeros(DType.UINT8, LivenessMonitor.RECORD_BYTES * impl.size());
            impl.allGather(Array.fromBytes(DType.UINT8, mine, mine.length), all);
            return all.toBytes();
        });
    }

    /**
     * As {@link #watchMembers(Map)}, the members' watch records gathered by {@code gather} (this rank's record in, every
     * rank's in rank order out) instead of over the group: an MPI job without a token gathers them through the
     * rendezvous store, since an MLX rank of the job would not make a collective jdist added (docs/reliability.md).
     */
    void watchMembers(Map<String, String> env, UnaryOperator<byte[]> gather) {
        if (impl == null || jobTable == null || impl.size() < 2) return;
        LivenessSettings settings = LivenessSettings.fromEnvironment(env);
        LivenessMonitor m = LivenessMonitor.open(impl.rank(), jobTable, settings, queue, JobToken.in(env));
        try {
            m.start(gather.apply(m.record()));
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
            else if (monitor != null) monitor.forgetSplit(queue);
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
