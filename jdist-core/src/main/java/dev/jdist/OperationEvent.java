package dev.jdist;

import dev.jdist.flight.OperationTrace;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * One group operation in a JDK Flight Recorder recording: what {@link dev.jdist.flight.OperationTrace} commits for
 * every collective, send, recv and split. Its duration is the operation's own time (from its turn in
 * the group's order to its end), so a recording shows where a rank's time goes next to GC and I/O.
 * Fields are described in docs/observability.md; field names are part of the interface.
 *
 * <p>Free when nobody records: the event object is not allocated when JFR is off (the compiler removes it: it never
 * leaves the queue's frame), and {@link #shouldCommit()} is false unless a recording enables the event.
 */
@Name(OperationEvent.NAME)
@Label("jdist Operation")
@Category("jdist")
@Description("A collective, send, recv, batch or split on a jdist group")
@StackTrace(false)
public final class OperationEvent extends Event {
    /** The event's name in recordings. */
    public static final String NAME = "dev.jdist.Operation";

    OperationEvent() {}

    @Label("Operation")
    @Description("all_sum, all_max, all_min, all_gather, sum_scatter, send, recv, split, broadcast, barrier, all_to_all, "
            + "all_to_all_v, gather, scatter or batch_send_recv")
    String operation;

    @Label("Data Type")
    @Description("The element type (MLX's name, e.g. float32); null for split, barrier and batch_send_recv")
    String dtype;

    @Label("Bytes")
    @Description("Bytes of this rank's input (recv: of the output; batch_send_recv: sent and received together)")
    @DataAmount
    long bytes;

    @Label("Group")
    @Description("world, or the split it came from: world/split@SEQUENCE(color=C)")
    String group;

    @Label("Rank")
    int rank;

    @Label("Group Size")
    int size;

    @Label("Peer")
    @Description("The other rank of a send or recv, the root of a broadcast, gather or scatter; -1 for other collectives")
    int peer;

    @Label("Backend")
    String backend;

    @Label("Sequence")
    @Description("The operation's number in its group, from 0, in issue order: the same operation has the same number on every rank")
    long sequence;

    @Label("Asynchronous")
    @Description("Issued with an *Async method")
    boolean async;

    @Label("Error")
    @Description("The exception that ended the operation; null when it succeeded")
    String error;

    /** Whether the JVM has JDK Flight Recorder (a runtime image made with jlink may leave out jdk.jfr). */
    private static final boolean JFR = ModuleLayer.boot().findModule("jdk.jfr").isPresent();

    /** Starts timing the operation whose turn it now is; null without JFR (the event class is then never loaded). */
    static OperationEvent beginOperation() {
        if (!JFR) return null;
        OperationEvent event = new OperationEvent();
        event.begin();
        return event;
    }

    /** Ends {@code event} (from {@link #beginOperation}, may be null) for operation {@code sequence} of {@code trace}'s group. */
    static void endOperation(OperationEvent event, OperationTrace trace, long sequence, OperationTrace.Kind kind, DType dtype,
                             long bytes, int peer, boolean async, Throwable failure) {
        if (event == null || !event.shouldCommit()) return;
        event.operation = kind.mlxName();
        event.dtype = dtype == null ? null : dtype.mlxName();
        event.bytes = bytes;
        event.group = trace.group();
        event.rank = trace.rank();
        event.size = trace.size();
        event.peer = peer;
        event.backend = trace.backend();
        event.sequence = sequence;
        event.async = async;
        event.error = failure == null ? null : failure.getClass().getSimpleName() + ": " + failure.getMessage();
        event.commit();
    }
}
