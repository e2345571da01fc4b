package dev.jdist.ring;

import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * What both ring transports do alike: the group's broken/closed state and its error messages, and the
 * rule that any failure in the middle of an operation breaks the group (spec §3.5) — the byte streams are
 * out of step then, so every connection is closed and the neighbours fail too.
 */
abstract class RingTransportBase implements RingTransport {
    final int rank;
    final RingLog log;
    private volatile DistributedException broken;
    volatile boolean closed;

    RingTransportBase(int rank, RingLog log) {
        this.rank = rank;
        this.log = log;
    }

    /** Runs the streams; {@code source} null means work already holds the input. Failures propagate. */
    abstract void execute(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                          long block, long stride, long base, ReduceOp op, DType dtype);

    /** Closes every connection of the group (so the neighbours notice at once). */
    abstract void closeConnections();

    /** The failure that broke the group, or null. */
    final DistributedException broken() { return broken; }

    @Override
    public final void checkUsable(String opName) {
        DistributedException b = broken;
        if (b != null) {
            String msg = "rank " + rank + ": " + opName + " cannot run: the ring group broke earlier: " + b.getMessage();
            if (b instanceof DeadlineExceededException) throw new DeadlineExceededException(msg, b);
            throw new PeerLostException(msg, b);
        }
        if (closed) throw new IllegalStateException("rank " + rank + ": " + opName + " on a closed ring group");
    }

    @Override
    public final void run(String opName, List<RingSchedule.Stream> streams, MemorySegment work, ReduceOp op, DType dtype) {
        guarded(opName, streams, work, null, 1, 0, 0, op, dtype);
    }

    @Override
    public final void runFromSource(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                                    long blockBytes, long sourceStride, long sourceOffset, ReduceOp op, DType dtype) {
        if (RingTransport.nothingToCopy(work, source, blockBytes, sourceStride, sourceOffset)) {
            guarded(opName, streams, work, null, 1, 0, 0, op, dtype);
        } else {
            guarded(opName, streams, work, source, blockBytes, sourceStride, sourceOffset, op, dtype);
        }
    }

    private void guarded(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                         long block, long stride, long base, ReduceOp op, DType dtype) {
        checkUsable(opName);
        try {
            execute(opName, streams, work, source, block, stride, base, op, dtype);
        } catch (DistributedException e) {
            breakGroup(e);
            throw e;
        } catch (RuntimeException | Error e) {
            // anything unexpected mid-operation leaves the byte streams out of step: the group cannot go on
            breakGroup(new PeerLostException("rank " + rank + ": " + opName + " failed unexpectedly (" + e
                    + "); the ring's byte streams are out of step, so the group is closed", e));
            throw e;
        }
    }

    /** A lost connection, named: this rank, the operation, the peer and its address, the direction, the cause. */
    final PeerLostException lostConnection(String opName, String peerDescription, int peer, String direction, String why,
                                           Throwable cause) {
        return new PeerLostException("rank " + rank + ": " + opName + " lost the connection to " + peerDescription
                + " while " + direction + ": " + why + ". Rank " + peer + " probably exited or "
                + "crashed (or a rank further round the ring did, and its failure travelled here); check its output. "
                + "The group is closed.", cause);
    }

    /**
     * No progress for the deadline: what the operation was waiting for ({@code waiting}) and what the peer may
     * be ({@code peerStates}, e.g. "hung, stopped, or").
     */
    final DeadlineExceededException noProgress(String opName, String timeoutText, List<String> waiting, String peerStates) {
        return new DeadlineExceededException("rank " + rank + ": " + opName + " made no progress for " + timeoutText
                + " s (JDIST_TIMEOUT) while " + String.join("; ", waiting) + ". The peer may be " + peerStates
                + " running a different sequence of operations; raise JDIST_TIMEOUT if it is just slow. "
                + "The group is closed.");
    }

    final void breakGroup(DistributedException e) {
        if (broken == null) broken = e;
        log.log("group broken: " + e.getMessage());
        closeConnections();
    }
}
