package dev.jdist;

/**
 * The one place every operation of a group passes through on its way to the backend
 * ({@link OperationQueue} calls {@link #begin()}, {@link #started} and {@link #end}): it gives each operation its
 * sequence number's meaning, emits a {@link OperationEvent} to JDK Flight Recorder, and keeps the group's
 * flight record ({@link OperationRing}, {@link FlightRecorder}).
 *
 * <p>Free when nobody records: the event object is not allocated when JFR is off (the compiler
 * removes it: it never leaves {@link OperationQueue}'s frame), and {@link OperationEvent#shouldCommit()}
 * is false unless a recording enables the event. Operations on 1-rank groups never reach a backend and
 * are not traced.
 */
final class OperationTrace {

    /** What an operation is, with its name in events (MLX's names; the operations MLX lacks named in its style, docs/reference/collectives.md §13). */
    enum Kind {
        ALL_SUM("all_sum"), ALL_MAX("all_max"), ALL_MIN("all_min"), ALL_GATHER("all_gather"),
        SUM_SCATTER("sum_scatter"), SEND("send"), RECV("recv"), SPLIT("split"),
        BROADCAST("broadcast"), BARRIER("barrier"), ALL_TO_ALL("all_to_all"), ALL_TO_ALL_V("all_to_all_v"),
        GATHER("gather"), SCATTER("scatter"), BATCH_SEND_RECV("batch_send_recv");

        final String mlxName;

        Kind(String mlxName) { this.mlxName = mlxName; }

        /** Whether every rank of the group takes part (not send, recv or a batch of them): ranks compare these in order. */
        boolean collective() { return this != SEND && this != RECV && this != BATCH_SEND_RECV; }

        /** Whether every rank's call has the same shape (all_to_all_v's inputs differ from rank to rank). */
        boolean sameShapeOnEveryRank() { return this != ALL_TO_ALL_V; }

        static Kind of(ReduceOp op) {
            return switch (op) {
                case SUM -> ALL_SUM;
                case MAX -> ALL_MAX;
                case MIN -> ALL_MIN;
            };
        }
    }

    /** The label of a process's first group of a backend. */
    static final String WORLD = "world";

    private final String group;
    private final String backend;
    private final int rank;
    private final int size;
    private final OperationRing ring;   // null when the flight recorder is off or the group has one rank

    /** @param group {@link #WORLD}, or {@link #splitLabel} of the parent's label */
    OperationTrace(String group, String backend, int rank, int size) {
        this.group = group;
        this.backend = backend;
        this.rank = rank;
        this.size = size;
        this.ring = size > 1 ? FlightRecorder.register(group, backend, rank, size) : null;
    }

    /** A split's label: the same on every member, and different for every split of the parent. */
    static String splitLabel(String parent, long splitSequence, int color) {
        return parent + "/split@" + splitSequence + "(color=" + color + ")";
    }

    String group() { return group; }

    int rank() { return rank; }

    /** Whether the JVM has JDK Flight Recorder (a runtime image made with jlink may leave out jdk.jfr). */
    private static final boolean JFR = ModuleLayer.boot().findModule("jdk.jfr").isPresent();

    /** Starts timing the operation whose turn it now is; null without JFR (the event class is then never loaded). */
    static OperationEvent begin() {
        if (!JFR) return null;
        OperationEvent event = new OperationEvent();
        event.begin();
        return event;
    }

    /** Operation {@code sequence} got its turn: into the flight record. {@code shape} is read now, not kept; null for split. */
    void started(long sequence, Kind kind, DType dtype, int[] shape, long bytes, int peer, boolean async) {
        if (ring != null) ring.begin(sequence, kind, dtype, shape, bytes, peer, async);
    }

    /** The group was closed: its flight record is the first to go when too many groups are kept. */
    void close() {
        if (ring != null) ring.close();
    }

    /** Ends operation {@code sequence} of this group; {@code failure} is what it threw, or null. */
    void end(OperationEvent event, long sequence, Kind kind, DType dtype, long bytes, int peer, boolean async,
             Throwable failure) {
        if (ring != null) {
            ring.end(sequence, failure);
            if (failure != null) FlightRecorder.failed(ring, sequence, failure);
        }
        if (event == null || !event.shouldCommit()) return;
        event.operation = kind.mlxName;
        event.dtype = dtype == null ? null : dtype.mlxName();
        event.bytes = bytes;
        event.group = group;
        event.rank = rank;
        event.size = size;
        event.peer = peer;
        event.backend = backend;
        event.sequence = sequence;
        event.async = async;
        event.error = failure == null ? null : failure.getClass().getSimpleName() + ": " + failure.getMessage();
        event.commit();
    }
}
