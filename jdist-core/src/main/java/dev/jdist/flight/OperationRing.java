package dev.jdist.flight;

import dev.jdist.DType;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * One group's flight record: its last {@link #capacity()} operations in a fixed ring of preallocated slots
 * (docs/observability.md, "The flight recorder"). Operation {@code s} lives in slot {@code s mod capacity}:
 * sequence numbers are the group's tickets, contiguous and begun one at a time, so the writer finds the next
 * slot by counting.
 *
 * <p>A slot is {@value #SLOT} longs side by side in one array (80 bytes: one or two cache lines, however many
 * fields), so an operation touches the same few lines at its start and end and allocates nothing:
 * <pre>
 *   0 stamp       even when the slot is whole, odd while it is being written
 *   1 sequence
 *   2 meta        peer (bits 0-31), kind + 1 (32-39), dtype + 1 (40-47; 0: none), ndim (48-55), state (56-59), async (60)
 *   3 bytes
 *   4 start       System.nanoTime() at the operation's turn
 *   5 end         System.nanoTime() at its end; 0 while it runs
 *   6-9 dims      the first 8 dimensions, two per long (low half first)
 * </pre>
 * The exception of a failed operation is kept beside the slots ({@code failure}), written only on failure.
 *
 * <p>One writer at a time: {@link dev.jdist.OperationQueue} runs a group's operations one after another, and the
 * hand-over between them (its lock) orders one writer's stores before the next's. Readers (a dump, on any
 * thread, while operations go on) take a consistent copy of each slot through its stamp (a seqlock), so the
 * hot path pays a few plain stores and no lock.
 */
final class OperationRing {

    /** Dimensions kept per operation; a deeper shape keeps its first ones and its true rank. */
    static final int MAX_DIMS = 8;
    /** Longs per slot. */
    static final int SLOT = 10;

    private static final int STAMP_AT = 0, SEQUENCE = 1, META = 2, BYTES = 3, START = 4, END = 5, DIMS = 6;
    private static final long STARTED = 1, COMPLETED = 2, FAILED = 3;
    private static final long STATE_MASK = 0xFL << 56;
    private static final long ASYNC_BIT = 1L << 60;
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle STARTED_COUNT;

    static {
        try {
            STARTED_COUNT = MethodHandles.lookup().findVarHandle(OperationRing.class, "started", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final OperationTrace.Kind[] KINDS = OperationTrace.Kind.values();
    private static final DType[] DTYPES = DType.values();

    private final String group;
    private final String backend;
    private final int rank;
    private final int size;
    private final int capacity;
    private volatile boolean closed;

    private final long[] slots;
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
        slots = new long[Math.multiplyExact(capacity, SLOT)];
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
        int b = i * SLOT;
        long s = slots[b + STAMP_AT];
        LONGS.setOpaque(slots, b + STAMP_AT, s + 1);
        VarHandle.storeStoreFence();
        int n = shape == null ? 0 : shape.length;
        slots[b + SEQUENCE] = seq;
        slots[b + META] = (p & 0xFFFFFFFFL) | (long) (k.ordinal() + 1) << 32 | (long) (t == null ? 0 : t.ordinal() + 1) << 40
                | (long) Math.min(n, 127) << 48 | STARTED << 56 | (isAsync ? ASYNC_BIT : 0);
        slots[b + BYTES] = nbytes;
        long d01 = 0, d23 = 0, d45 = 0, d67 = 0;
        switch (Math.min(n, MAX_DIMS)) {   // falls through: the first min(n, 8) dimensions
            case 8: d67 |= (long) shape[7] << 32;
            case 7: d67 |= shape[6] & 0xFFFFFFFFL;
            case 6: d45 |= (long) shape[5] << 32;
            case 5: d45 |= shape[4] & 0xFFFFFFFFL;
            case 4: d23 |= (long) shape[3] << 32;
            case 3: d23 |= shape[2] & 0xFFFFFFFFL;
            case 2: d01 |= (long) shape[1] << 32;
            case 1: d01 |= shape[0] & 0xFFFFFFFFL;
            default: break;
        }
        slots[b + DIMS] = d01;
        slots[b + DIMS + 1] = d23;
        slots[b + DIMS + 2] = d45;
        slots[b + DIMS + 3] = d67;
        slots[b + START] = System.nanoTime();
        slots[b + END] = 0;
        STARTED_COUNT.setRelease(this, seq + 1);
        LONGS.setRelease(slots, b + STAMP_AT, s + 2);
    }

    /** Operation {@code seq} ended; {@code thrown} is what it threw, or null. */
    void end(long seq, Throwable thrown) {
        int i = current;
        if (slots[i * SLOT + SEQUENCE] != seq) i = slot(seq);   // not the running one: cannot happen while operations run one at a time
        int b = i * SLOT;
        long s = slots[b + STAMP_AT];
        LONGS.setOpaque(slots, b + STAMP_AT, s + 1);
        VarHandle.storeStoreFence();
        if (thrown != null) failure[i] = thrown;
        slots[b + END] = System.nanoTime();
        slots[b + META] = (slots[b + META] & ~STATE_MASK) | (thrown == null ? COMPLETED : FAILED) << 56;
        LONGS.setRelease(slots, b + STAMP_AT, s + 2);
    }

    /** Whether an operation of this group has begun and not ended. */
    boolean inFlight() {
        long n = (long) STARTED_COUNT.getAcquire(this);
        if (n == 0) return false;
        int b = slot(n - 1) * SLOT;
        long s = (long) LONGS.getAcquire(slots, b + STAMP_AT);
        return (s & 1) == 1 || (slots[b + META] & STATE_MASK) >>> 56 == STARTED;
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
        int b = i * SLOT;
        long[] copy = new long[SLOT];
        for (int attempt = 0; attempt < 100; attempt++) {
            long s1 = (long) LONGS.getAcquire(slots, b + STAMP_AT);
            if ((s1 & 1) == 1) {
                Thread.onSpinWait();
                continue;
            }
            System.arraycopy(slots, b, copy, 0, SLOT);
            Throwable f = failure[i];
            VarHandle.loadLoadFence();
            if ((long) LONGS.getOpaque(slots, b + STAMP_AT) != s1) continue;
            long meta = copy[META];
            int kc = (int) (meta >>> 32) & 0xFF;
            if (copy[SEQUENCE] != seq || kc == 0) return null;   // overwritten by a later operation, or never written
            OperationTrace.Kind k = KINDS[kc - 1];
            int tc = (int) (meta >>> 40) & 0xFF;
            int n = (int) (meta >>> 48) & 0xFF;
            long st = (meta & STATE_MASK) >>> 56;
            List<Integer> shape = null;
            if (k != OperationTrace.Kind.SPLIT) {
                shape = new ArrayList<>(Math.min(n, MAX_DIMS));
                for (int d = 0; d < Math.min(n, MAX_DIMS); d++) shape.add((int) (copy[DIMS + d / 2] >>> (32 * (d % 2))));
            }
            String stateName = st == STARTED ? FlightDump.STARTED : st == COMPLETED ? FlightDump.COMPLETED : FlightDump.FAILED;
            long t0 = copy[START], t1 = copy[END];
            return new FlightDump.Operation(seq, k.mlxName(), tc == 0 ? null : DTYPES[tc - 1].mlxName(), shape,
                    n > MAX_DIMS ? n : null, copy[BYTES], (int) meta, (meta & ASYNC_BIT) != 0, stateName,
                    st == FAILED && f != null ? FlightRecorder.describe(f) : null,
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
