package dev.jdist;

import java.util.Optional;
import java.util.OptionalInt;

/**
 * Base of every error a backend raises at run time. Unchecked: collectives sit on the hot path.
 *
 * <p>Where the backend knows them, the facts are fields as well as words in the message: the rank
 * that raised it ({@link #rank()}) and the operation it was in ({@link #operation()}, e.g.
 * {@code "all_sum float32[1024]"}).
 */
public class DistributedException extends RuntimeException {
    private final int rank;
    private final String operation;

    public DistributedException(String message) { this(message, null, -1, null); }

    public DistributedException(String message, Throwable cause) { this(message, cause, -1, null); }

    /**
     * @param rank      the rank (in the group that failed) raising the error, or -1 when unknown
     * @param operation the operation in progress, or null
     */
    public DistributedException(String message, Throwable cause, int rank, String operation) {
        super(message, cause);
        this.rank = rank;
        this.operation = operation;
    }

    /** The rank that raised this error, when the backend knows it. */
    public OptionalInt rank() { return rank < 0 ? OptionalInt.empty() : OptionalInt.of(rank); }

    /** The operation in progress, e.g. {@code "all_sum float32[1024]"}, when the error happened in one. */
    public Optional<String> operation() { return Optional.ofNullable(operation); }
}
