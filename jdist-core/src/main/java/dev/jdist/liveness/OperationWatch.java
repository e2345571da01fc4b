package dev.jdist.liveness;

import dev.jdist.DistributedException;
import dev.jdist.OperationFingerprint;

/**
 * What a group with a liveness watch adds around each of its operations (docs/reliability.md): the group's operation
 * queue ({@code dev.jdist.OperationQueue}) asks it before every operation and when one fails.
 */
public interface OperationWatch {
    /** Before the operation moves data: the mismatch check of {@code JDIST_DEBUG=detail}; throws on a mismatch. */
    void before(OperationFingerprint operation);

    /** What to throw for {@code failure}, which ended {@code operation}: it, or the cause found elsewhere in the job. */
    DistributedException failed(DistributedException failure, OperationFingerprint operation);

    /** Where rank {@code peer} runs as the job's table describes it (name, pid, address), or null when unknown. */
    String peerHost(int peer);
}
