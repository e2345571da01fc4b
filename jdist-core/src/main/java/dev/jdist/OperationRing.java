package dev.jdist;

import dev.jdist.flight.FlightDump;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * One group's flight record: its last {@link #capacity()} operations in a fixed ring of preallocated slots
 * (docs/observability.md, "The flight recorder"). Operation {@code s} lives in slot {@code s mod capacity}:
 * sequence numbers are the group's tickets, contiguous and run one at a time, so slots need no allocation
 * and no counter of their own.
 *
 * <p>One writer at a time: {@link OperationQueue} runs a group's operations one after another, and the
 * hand-over between them (its lock) orders one writer's stores before the next's. Readers (a dump, on any
 * thread, while operations go on) take a consistent copy of each slot through a per-slot stamp (a seqlock:
 * odd while the slot is being written), so the hot path pays a few plain stores and no lock.
 */
final class OperationRing {

    /** Dimensions kept per operation; a deeper shape keeps its first ones and its true rank. */
    static final int MAX_DIMS = 8;

    private static final byte STARTED = 1, COMPLETED = 2, FAILED = 3;
    private static final VarHandle STAMP = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle STARTED_COUNT;

    static {
        try {
            STARTED_COUNT = MethodHandles.lookup().findVarHandle(OperationRing.class, "started", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String group;
    private final String backend;
    private final int rank;
    private final int size;
    private final int capacity;
    private volatile boolean closed;

    private static final OperationTrace.Kind[] KINDS = OperationTrace.Kind.values();
    private static final DType[] DTYPES = DType.values();

    private final long[] stamp;
    private final long[] sequence;
    private final byte[] kind;     // Kind ordinal + 1; 0: never written
    private final byte[] dtype;    // DType ordinal + 1; 0: none (split)
    private final byte[] ndim;
    private final int[] dims;
    private final long[] bytes;
    private final int[] peer;
    private final boolean[] async;
    private final byte[] state;
    private final long[] startNanos;
    private final long[] endNanos;
    private final Throwable[] failure;
    private long started;   // operations begun so far: the writer's, set with release for dumps
    private int next;       // the writer's: the slot of the next operation (sequence mod capacity, without dividing)
    private int current;    // the writer's: the slot of the running operation
    private boolean failed; // a failure was reported for this group; guarded by FlightRecorder.class

    OperationRing(String group, String backend, int rank, int size, int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("flight record capacity must be >= 1, got " + capacity);
        this.group = group;
        this.backend = backend;
        this.rank = rank;
        this.size = size;
        this.capacity = capacity;
        stamp = new long[capacity];
        sequence = new long[capacity];
        kind = new byte[capacity];
        dtype = new byte[capacity];
        ndim = new byte[capacity];
        dims = new int[capacity * MAX_DIMS];
        bytes = new long[capacity];
        peer = new int[capacity];
        async = new boolean[capacity];
        state = new byte[capacity];
        startNanos = new long[capacity];
        endNanos = new long[capacity];
        failure = new Throwable[capacity];
    }

    int capacity() { return capacity; }

    String group() { return group; }

    int rank() { return rank; }

    boolean closed() { return closed; }

    void close() { closed = true; }

    /** Operation {@code seq} got its turn. {@code shape} is read now (not kept); null for split. */
    void begin(long seq, OperationTrace.Kind k, DType t, int[] shape, long nbytes, int p, boolean isAsync) {
        int i = next;   // == seq mod capacity: every sequence number begins once, in order
        next = i + 1 == capacity ? 0 : i + 1;
        current = i;
        long s = stamp[i];
        STAMP.setOpaque(stamp, i, s + 1);
        VarHandle.storeStoreFence();
        sequence[i] = seq;
        kind[i] = (byte) (k.ordinal() + 1);
        dtype[i] = (byte) (t == null ? 0 : t.ordinal() + 1);
        int n = shape == null ? 0 : shape.length;
        ndim[i] = (byte) Math.min(n, 127);
        for (int d = 0, base = i * MAX_DIMS; d < Math.min(n, MAX_DIMS); d++) dims[base + d] = shape[d];
        bytes[i] = nbytes;
        peer[i] = p;
        async[i] = isAsync;
        state[i] = STARTED;
        startNanos[i] = System.nanoTime();
        endNanos[i] = 0;
        if (failure[i] != null) failure[i] = null;
        STARTED_COUNT.setRelease(this, seq + 1);
        STAMP.setRelease(stamp, i, s + 2);
    }

    /** Operation {@code seq} ended; {@code thrown} is what it threw, or null. */
    void end(long seq, Throwable thrown) {
        int i = current;
        if (sequence[i] != seq) i = slot(seq);   // not the running one: cannot happen while operations run one at a time
        long s = stamp[i];
        STAMP.setOpaque(stamp, i, s + 1);
        VarHandle.storeStoreFence();
        endNanos[i] = System.nanoTime();
        state[i] = thrown == null ? COMPLETED : FAILED;
        if (thrown != null) failure[i] = thrown;
        STAMP.setRelease(stamp, i, s + 2);
    }

    /** Whether an operation of this group has begun and not ended. */
    boolean inFlight() {
        long n = (long) STARTED_COUNT.getAcquire(this);
        if (n == 0) return false;
        int i = slot(n - 1);
        long s = (long) STAMP.getAcquire(stamp, i);
        return (s & 1) == 1 || state[i] == STARTED;
    }

    private int slot(long seq) { return (int) (seq % capacity); }

    /**
     * A consistent copy of what is kept, oldest first; times on the wall clock through {@code clock}. A slot
     * being rewritten while it is read is read again (a few tries) or left out.
     */
    FlightDump.GroupRecord snapshot(WallClock clock) {
        long n = (long) STARTED_COUNT.getAcquire(this);
        List<FlightDump.Operation> ops = new ArrayList<>();
        for (long seq = Math.max(0, n - capacity); seq < n; seq++) {
            FlightDump.Operation op = read(seq, clock);
            if (op != null) ops.add(op);
        }
        return new FlightDump.GroupRecord(group, backend, rank, size, n, ops);
    }

    /** True the first time a failure of this group is reported (the caller holds FlightRecorder's lock). */
    boolean markFailed() {
        if (failed) return false;
        failed = true;
        return true;
    }

    /** Operation {@code seq} as kept, or null when it is no longer kept. */
    FlightDump.Operation snapshotOf(long seq, WallClock clock) { return read(seq, clock); }

    private FlightDump.Operation read(long seq, WallClock clock) {
        int i = slot(seq);
        for (int attempt = 0; attempt < 100; attempt++) {
            long s1 = (long) STAMP.getAcquire(stamp, i);
            if ((s1 & 1) == 1) {
                Thread.onSpinWait();
                continue;
            }
            long sq = sequence[i];
            int kc = kind[i];
            int tc = dtype[i];
            int n = ndim[i];
            OperationTrace.Kind k = kc == 0 ? null : KINDS[kc - 1];
            DType t = tc == 0 ? null : DTYPES[tc - 1];
            List<Integer> shape = null;
            if (k != null && k != OperationTrace.Kind.SPLIT) {
                shape = new ArrayList<>(n);
                for (int d = 0, base = i * MAX_DIMS; d < Math.min(n, MAX_DIMS); d++) shape.add(dims[base + d]);
            }
            long b = bytes[i];
            int p = peer[i];
            boolean a = async[i];
            byte st = state[i];
            long t0 = startNanos[i];
            long t1 = endNanos[i];
            Throwable f = failure[i];
            VarHandle.loadLoadFence();
            if ((long) STAMP.getOpaque(stamp, i) != s1) continue;
            if (sq != seq || k == null) return null;   // overwritten by a later operation, or never written
            String stateName = switch (st) {
                case STARTED -> FlightDump.STARTED;
                case COMPLETED -> FlightDump.COMPLETED;
                default -> FlightDump.FAILED;
            };
            return new FlightDump.Operation(sq, k.mlxName, t == null ? null : t.mlxName(), shape,
                    n > MAX_DIMS ? n : null, b, p, a, stateName, f == null ? null : FlightRecorder.describe(f),
                    clock.toInstant(t0).toString(), st == STARTED ? null : clock.toInstant(t1).toString(),
                    st == STARTED ? null : Math.max(0, (t1 - t0) / 1000));
        }
        return null;
    }

    /** Turns {@link System#nanoTime()} readings into wall-clock instants (one reading of both clocks per process). */
    record WallClock(long anchorNanos, java.time.Instant anchor) {
        static WallClock now() { return new WallClock(System.nanoTime(), java.time.Instant.now()); }

        java.time.Instant toInstant(long nanos) { return anchor.plusNanos(nanos - anchorNanos); }
    }
}
