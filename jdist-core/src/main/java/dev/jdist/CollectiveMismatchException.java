package dev.jdist;

import java.util.Map;
import java.util.TreeMap;

/**
 * Ranks of a group called different collectives at the same point of their programs (another operation, dtype or
 * shape: a bug in the program), found by comparing each collective's {@link OperationFingerprint} (docs/reliability.md):
 * before any data moves with {@code JDIST_DEBUG=detail}, or, by default, once the mismatched call stalls. Every rank
 * raises it, naming every rank's call: {@code rank 2 is in all_sum float32[1024] #1834; ranks 0, 1, 3 are in
 * all_gather int32[12] #1834}. Only between jdist ranks.
 */
public class CollectiveMismatchException extends DistributedException {
    private final Map<Integer, OperationFingerprint> calls;

    /** @param calls every rank's call, as far as this rank knows them (rank → call) */
    public CollectiveMismatchException(String message, Throwable cause, int rank, String operation,
                                       Map<Integer, OperationFingerprint> calls) {
        super(message, cause, rank, operation);
        this.calls = java.util.Collections.unmodifiableMap(new TreeMap<>(calls));
    }

    /** Each rank's call at the point where they differ (rank → call), as far as this rank knows them. */
    public Map<Integer, OperationFingerprint> calls() { return calls; }
}
