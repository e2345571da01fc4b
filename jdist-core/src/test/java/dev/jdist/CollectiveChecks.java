package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.spi.GroupImpl;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * The values of the operations MLX lacks (spec docs/reference/collectives.md §13), checked on one rank of any group:
 * every dtype, sizes 0, 1, odd and large (several parts), roots other than 0, all_to_all of equal and of any block
 * sizes (zero-row blocks included), batches whose order would deadlock blocking calls. Every rank of the group runs
 * {@link #run} at the same time; the results are compared byte for byte with what the contract says. Used by the
 * multi-process programs of every backend and by in-process tests.
 */
public final class CollectiveChecks {

    /**
     * What to check.
     *
     * @param dtypes       the dtypes of the small sizes
     * @param largeDtypes  the dtypes also checked at {@code largeBytes} (several parts on the ring)
     * @param largeBytes   bytes per rank (per block for all_to_all and scatter) of the large size
     * @param anyPeer      whether send/recv and batches may name any rank (else only ring neighbours)
     */
    public record Options(List<DType> dtypes, List<DType> largeDtypes, long largeBytes, boolean anyPeer) {
        /** Every dtype, two of them large, any peer. */
        public static Options full(long largeBytes) {
            return new Options(List.of(DType.values()), List.of(DType.FLOAT32, DType.INT64), largeBytes, true);
        }

        public Options neighboursOnly() { return new Options(dtypes, largeDtypes, largeBytes, false); }
    }

    private final Group g;
    private final int n, r;
    private final Options o;
    private final List<String> errors = new ArrayList<>();

    private CollectiveChecks(Group g, Options o) {
        this.g = g;
        this.n = g.size();
        this.r = g.rank();
        this.o = o;
    }

    /** Runs every check on this rank; returns what was wrong (empty when all is right). */
    public static List<String> run(Group g, Options o) {
        CollectiveChecks c = new CollectiveChecks(g, o);
        c.runAll();
        return c.errors;
    }

    /** What the split check uses: four dtypes of different widths, small sizes only. */
    public static final Options SPLIT = new Options(List.of(DType.FLOAT32, DType.BFLOAT16, DType.INT8, DType.BOOL), List.of(), 0, true);

    /**
     * Runs every check on {@code world} with {@code worldOptions}, then on its split by parity with the key reversing the
     * ranks (members of a sub-group in descending world rank), with {@link #SPLIT}; every line says which group.
     */
    public static List<String> runOnWorldAndSplit(Group world, Options worldOptions) {
        List<String> wrong = new ArrayList<>();
        run(world, worldOptions).forEach(w -> wrong.add("world: " + w));
        int r = world.rank(), n = world.size();
        try (Group half = world.split(r % 2, n - r)) {
            run(half, SPLIT).forEach(w -> wrong.add("split: " + w));
        }
        return wrong;
    }

    /** A {@link Group} over {@code impl} whose members are known to be jdist (as with a job token): for in-process tests. */
    public static Group jdistGroup(GroupImpl impl) {
        return new Group(impl, OperationTrace.WORLD, JdistOperationsTest.table(impl.size()), null);
    }

    /** A {@link Group} over {@code impl} whose members are not known to be jdist (MLX peers possible): for in-process tests. */
    public static Group groupWithMlxPeersPossible(GroupImpl impl) {
        return new Group(impl, OperationTrace.WORLD);
    }

    // ------------------------------------------------------------------ values

    /** Element i of the array identified by {@code a}: exact in every dtype for a < 100 (unsigned stay non-negative). */
    static double value(DType t, int a, long i) {
        if (t == DType.BOOL) return ((i + a) % 3 == 0) ? 1 : 0;
        double v = (i % 5) + a % 97;
        return t.isUnsigned() ? v : v - 2;
    }

    static Array pattern(DType t, int a, long elements, int... shape) {
        Array x = Array.zeros(t, shape.length == 0 ? new int[] {Math.toIntExact(elements)} : shape);
        for (long i = 0; i < elements; i++) {
            if (t == DType.COMPLEX64) x.setComplex(i, (float) value(t, a, i), (float) (a - i % 3));
            else x.setDouble(i, value(t, a, i));
        }
        return x;
    }

    /** The identity of rank q's block j (all_to_all, scatter): distinct for every (q, j) of a group of up to 9 ranks. */
    private int block(int q, int j) { return q * 10 + j; }

    private void expectBytes(String what, Array got, Array want) {
        if (got.nbytes() != want.nbytes()) {
            errors.add(what + ": " + got.nbytes() + " bytes, want " + want.nbytes());
            return;
        }
        byte[] a = got.toBytes(), b = want.toBytes();
        if (!Arrays.equals(a, b)) errors.add(what + ": first difference at byte " + Arrays.mismatch(a, b) + " of " + a.length);
    }

    /** {@code want}'s bytes at byte offset {@code at} of {@code got}. */
    private void expectBytesAt(String what, Array got, long at, Array want) {
        byte[] a = Arrays.copyOfRange(got.toBytes(), (int) at, (int) (at + want.nbytes()));
        byte[] b = want.toBytes();
        if (!Arrays.equals(a, b)) errors.add(what + ": first difference at byte " + (at + Arrays.mismatch(a, b)));
    }

    // ------------------------------------------------------------------ the checks

    private void runAll() {
        List<Integer> roots = new ArrayList<>(new LinkedHashSet<>(List.of(n - 1, 0, n / 2)));
        for (DType t : o.dtypes()) {
            for (long e : new long[] {0, 1, 7}) {
                for (int root : roots) checkBroadcast(t, e, root);
                checkAllToAll(t, e);
                checkGatherScatter(t, e, roots.getFirst());
            }
            checkAllToAllV(t);
            checkPointToPoint(t, 5);
            if (errors.size() > 30) return;
        }
        for (DType t : o.largeDtypes()) {
            long e = o.largeBytes() / t.itemSize() + 3;
            checkBroadcast(t, e, 1 % n);
            checkAllToAll(t, e);
            checkGatherScatter(t, e, n - 1);
            checkPointToPoint(t, e);
        }
        checkBarrierOrders();
        checkIntoVariants();
        checkAsync();
    }

    private void checkBroadcast(DType t, long e, int root) {
        Array x = pattern(t, r == root ? 50 + root : 90, e);
        Array got = g.broadcast(x, root);
        if (r == root && got != x) errors.add("broadcast: the root did not get its input back");
        expectBytes(t + " broadcast E=" + e + " root " + root, got, pattern(t, 50 + root, e));
    }

    private void checkAllToAll(DType t, long e) {
        // rank r's input: n blocks of e elements, block j identified by block(r, j); a [n*e, 1] array
        Array x = Array.zeros(t, Math.toIntExact(n * e), 1);
        for (int j = 0; j < n; j++) copyInto(pattern(t, block(r, j), e), x, j * e * t.itemSize());
        Array got = g.allToAll(x);
        if (!Arrays.equals(got.shape(), x.shape())) errors.add(t + " all_to_all shape " + Arrays.toString(got.shape()));
        for (int q = 0; q < n; q++) {
            expectBytesAt(t + " all_to_all E=" + e + " block from " + q, got, q * e * t.itemSize(), pattern(t, block(q, r), e));
        }
    }

    /** Rank q sends {@code rows(q, j)} rows of 3 elements to rank j: zero for some pairs, different in each direction. */
    private static int rows(int q, int j) { return (q + 2 * j) % 3; }

    private void checkAllToAllV(DType t) {
        int[] send = new int[n], recv = new int[n];
        int sendRows = 0, recvRows = 0;
        for (int j = 0; j < n; j++) {
            sendRows += send[j] = rows(r, j);
            recvRows += recv[j] = rows(j, r);
        }
        Array x = Array.zeros(t, sendRows, 3);
        long off = 0;
        for (int j = 0; j < n; j++) {
            copyInto(pattern(t, block(r, j), send[j] * 3L), x, off);
            off += send[j] * 3L * t.itemSize();
        }
        for (int form = 0; form < 2; form++) {
            Array got = form == 0 ? g.allToAllV(x, send) : g.allToAllV(x, send, recv);
            if (got.shape(0) != recvRows || got.shape(1) != 3) {
                errors.add(t + " all_to_all_v shape " + Arrays.toString(got.shape()) + ", want [" + recvRows + ", 3]");
                return;
            }
            long at = 0;
            for (int q = 0; q < n; q++) {
                expectBytesAt(t + " all_to_all_v (" + (form == 0 ? "exchanging" : "given") + " splits) rows from " + q, got, at,
                        pattern(t, block(q, r), recv[q] * 3L));
                at += recv[q] * 3L * t.itemSize();
            }
        }
    }

    private void checkGatherScatter(DType t, long e, int root) {
        Array mine = pattern(t, block(r, 0), e);
        Array got = g.gather(mine, root);
        if (r != root) {
            if (got != mine) errors.add(t + " gather: a non-root rank did not get its input back");
        } else {
            if (got.shape(0) != n * e) errors.add(t + " gather shape " + Arrays.toString(got.shape()));
            for (int q = 0; q < n; q++) {
                expectBytesAt(t + " gather E=" + e + " block " + q, got, q * e * t.itemSize(), pattern(t, block(q, 0), e));
            }
        }
        Array all = Array.zeros(t, Math.toIntExact(n * e));
        if (r == root) for (int j = 0; j < n; j++) copyInto(pattern(t, block(root, j), e), all, j * e * t.itemSize());
        expectBytes(t + " scatter E=" + e + " root " + root, g.scatter(all, root), pattern(t, block(root, r), e));
    }

    /**
     * Single send/recv to any rank (when allowed), then batches whose receives are listed before their sends: every
     * rank receives from both sides before it sends, which deadlocks unless the transfers of a batch run together.
     */
    private void checkPointToPoint(DType t, long e) {
        if (n == 1) return;   // no peer to name
        int right = (r + 1) % n, left = (r - 1 + n) % n;
        List<PeerOp> ops = new ArrayList<>();
        ops.add(PeerOp.recv(new int[] {Math.toIntExact(e)}, t, left));
        if (n > 2) ops.add(PeerOp.recv(new int[] {Math.toIntExact(e)}, t, right));
        ops.add(PeerOp.send(pattern(t, block(r, right), e), right));
        if (n > 2) ops.add(PeerOp.send(pattern(t, block(r, left), e), left));
        // two messages to the same peer in one batch arrive in order
        ops.add(PeerOp.recv(new int[] {2}, t, left));
        ops.add(PeerOp.send(pattern(t, 77, 2), right));
        if (o.anyPeer() && n > 3) {
            int far = (r + 2) % n, from = (r - 2 + n) % n;
            ops.add(PeerOp.recv(new int[] {Math.toIntExact(e)}, t, from));
            ops.add(PeerOp.send(pattern(t, block(r, far), e), far));
        }
        List<Array> got = g.batchSendRecv(ops);
        int i = 0;
        expectBytes(t + " batch from left E=" + e, got.get(i++), pattern(t, block(left, r), e));
        if (n > 2) expectBytes(t + " batch from right E=" + e, got.get(i++), pattern(t, block(right, r), e));
        expectBytes(t + " batch second message from left", got.get(i++), pattern(t, 77, 2));
        if (o.anyPeer() && n > 3) expectBytes(t + " batch from rank " + (r - 2 + n) % n, got.get(i), pattern(t, block((r - 2 + n) % n, r), e));

        if (o.anyPeer() && n > 2) {
            // single calls between the ranks of pairs (q, q + half); the lower rank sends first
            int half = n / 2;
            if (r < 2 * half) {
                int peer = r < half ? r + half : r - half;
                Array out = Array.zeros(t, Math.toIntExact(e));
                if (r < half) {
                    g.send(pattern(t, block(r, peer), e), peer);
                    g.recvInto(out, peer);
                } else {
                    g.recvInto(out, peer);
                    g.send(pattern(t, block(r, peer), e), peer);
                }
                expectBytes(t + " recv from rank " + peer + " E=" + e, out, pattern(t, block(peer, r), e));
            }
        }
    }

    /** A barrier lets nobody through before everyone arrived: checked with an all_gather of arrival counters. */
    private void checkBarrierOrders() {
        for (int round = 0; round < 3; round++) g.barrier();
        long before = System.nanoTime();
        g.barrier();
        long after = System.nanoTime();
        // every rank's exit comes after every rank's entry: gather both and compare on rank 0 (one clock per host:
        // the test processes share one machine, so System.nanoTime is comparable across them)
        Array times = g.allGather(Array.of(before, after));
        long latestEntry = Long.MIN_VALUE, earliestExit = Long.MAX_VALUE;
        for (int q = 0; q < n; q++) {
            latestEntry = Math.max(latestEntry, times.getLong(2L * q));
            earliestExit = Math.min(earliestExit, times.getLong(2L * q + 1));
        }
        if (earliestExit < latestEntry) errors.add("barrier: a rank left at " + earliestExit + " before the last arrived at " + latestEntry);
    }

    private void checkIntoVariants() {
        DType t = DType.INT16;
        int root = n - 1;
        Array buf = pattern(t, r == root ? 33 : 1, 9);
        if (g.broadcastInto(buf, root) != buf) errors.add("broadcastInto did not return its buffer");
        expectBytes("broadcastInto", buf, pattern(t, 33, 9));
        Array x = Array.zeros(t, 2 * n);
        for (int j = 0; j < n; j++) copyInto(pattern(t, block(r, j), 2), x, 4L * j);
        Array out = Array.zeros(t, 2 * n);
        g.allToAllInto(x, out);
        for (int q = 0; q < n; q++) expectBytesAt("allToAllInto from " + q, out, 4L * q, pattern(t, block(q, r), 2));
        Array gathered = r == root ? Array.zeros(t, 2 * n) : null;
        g.gatherInto(pattern(t, block(r, 0), 2), gathered, root);
        if (r == root) for (int q = 0; q < n; q++) expectBytesAt("gatherInto block " + q, gathered, 4L * q, pattern(t, block(q, 0), 2));
        Array part = Array.zeros(t, 2);
        g.scatterInto(r == root ? x : null, part, root);
        expectBytes("scatterInto", part, pattern(t, block(root, r), 2));
    }

    private void checkAsync() {
        try {
            var b = g.broadcastAsync(pattern(DType.FLOAT32, r == 0 ? 5 : 6, 4), 0);
            var bar = g.barrierAsync();
            var a = g.allToAllAsync(pattern(DType.FLOAT32, r, n));
            var v = g.allToAllVAsync(pattern(DType.FLOAT32, r, n), ones());
            var ga = g.gatherAsync(pattern(DType.FLOAT32, r, 3), 0);
            var sc = g.scatterAsync(pattern(DType.FLOAT32, 8, 2L * n), n - 1);
            var batch = n == 1 ? null : g.batchSendRecvAsync(List.of(PeerOp.recv(new int[] {3}, DType.FLOAT32, (r - 1 + n) % n),
                    PeerOp.send(pattern(DType.FLOAT32, r, 3), (r + 1) % n)));
            expectBytes("broadcastAsync", b.get(), pattern(DType.FLOAT32, 5, 4));
            bar.get();
            if (a.get().nbytes() != 4L * n || v.get().nbytes() != 4L * n) errors.add("all_to_all async sizes");
            if (r == 0) expectBytesAt("gatherAsync block " + (n - 1), ga.get(), 12L * (n - 1), pattern(DType.FLOAT32, n - 1, 3));
            else ga.get();
            Array want = Array.zeros(DType.FLOAT32, 2);
            for (int i = 0; i < 2; i++) want.setDouble(i, value(DType.FLOAT32, 8, 2L * r + i));
            expectBytes("scatterAsync", sc.get(), want);
            if (batch != null) expectBytes("batchSendRecvAsync", batch.get().getFirst(), pattern(DType.FLOAT32, (r - 1 + n) % n, 3));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            errors.add("interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            errors.add("an async operation failed: " + e.getCause());
        }
    }

    private int[] ones() {
        int[] s = new int[n];
        Arrays.fill(s, 1);
        return s;
    }

    private static void copyInto(Array from, Array into, long byteOffset) {
        java.lang.foreign.MemorySegment.copy(from.segment(), 0, into.segment(), byteOffset, from.nbytes());
    }
}
