package dev.jdist.flight;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

/**
 * A group's side of the flight recorder: the group's operation queue ({@code dev.jdist.OperationQueue}) calls
 * {@link #started} and {@link #end} around every operation, which keeps the group's flight record
 * ({@link OperationRing}, {@link FlightRecorder}); the same queue emits the JDK Flight Recorder event
 * ({@link dev.jdist.OperationEvent}) from what this describes. Operations on 1-rank groups never reach a backend and
 * are not recorded.
 */
public final class OperationTrace {

    /** What an operation is, with its name in events (MLX's names; the operations MLX lacks named in its style, docs/reference/collectives.md §13). */
    public enum Kind {
        ALL_SUM("all_sum"), ALL_MAX("all_max"), ALL_MIN("all_min"), ALL_GATHER("all_gather"),
        SUM_SCATTER("sum_scatter"), SEND("send"), RECV("recv"), SPLIT("split"),
        BROADCAST("broadcast"), BARRIER("barrier"), ALL_TO_ALL("all_to_all"), ALL_TO_ALL_V("all_to_all_v"),
        GATHER("gather"), SCATTER("scatter"), BATCH_SEND_RECV("batch_send_recv");

        private final String mlxName;

        Kind(String mlxName) { this.mlxName = mlxName; }

        /** The operation's name in events, records and messages. */
        public String mlxName() { return mlxName; }

        /** Whether every rank of the group takes part (not send, recv or a batch of them): ranks compare these in order. */
        public boolean collective() { return this != SEND && this != RECV && this != BATCH_SEND_RECV; }

        /** Whether every rank's call has the same shape (all_to_all_v's inputs differ from rank to rank). */
        public boolean sameShapeOnEveryRank() { return this != ALL_TO_ALL_V; }

        public static Kind of(ReduceOp op) {
            return switch (op) {
                case SUM -> ALL_SUM;
                case MAX -> ALL_MAX;
                case MIN -> ALL_MIN;
            };
        }
    }

    /** The label of a process's first group of a backend. */
    public static final String WORLD = "world";

    private final String group;
    private final String backend;
    private final int rank;
    private final int size;
    private final OperationRing ring;   // null when the flight recorder is off or the group has one rank

    /** @param group {@link #WORLD}, or {@link #splitLabel} of the parent's label */
    public OperationTrace(String group, String backend, int rank, int size) {
        this.group = group;
        this.backend = backend;
        this.rank = rank;
        this.size = size;
        this.ring = size > 1 ? FlightRecorder.register(group, backend, rank, size) : null;
    }

    /** A split's label: the same on every member, and different for every split of the parent. */
    public static String splitLabel(String parent, long splitSequence, int color) {
        return parent + "/split@" + splitSequence + "(color=" + color + ")";
    }

    public String group() { return group; }

    public String backend() { return backend; }

    public int rank() { return rank; }

    public int size() { return size; }

    /** Operation {@code sequence} got its turn: into the flight record. {@code shape} is read now, not kept; null for split. */
    public void started(long sequence, Kind kind, DType dtype, int[] shape, long bytes, int peer, boolean async) {
        if (ring != null) ring.begin(sequence, kind, dtype, shape, bytes, peer, async);
    }

    /** The group was closed: its flight record is the first to go when too many groups are kept. */
    public void close() {
        if (ring != null) ring.close();
    }

    /** Ends operation {@code sequence} of this group; {@code failure} is what it threw, or null. */
    public void end(long sequence, Throwable failure) {
        if (ring != null) {
            ring.end(sequence, failure);
            if (failure != null) FlightRecorder.failed(ring, sequence, failure);
        }
    }
}
