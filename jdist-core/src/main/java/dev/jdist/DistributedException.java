package dev.jdist;

import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * Base of every error a backend raises at run time. Unchecked: collectives sit on the hot path.
 *
 * <p>Where they are known, the facts are fields as well as words in the message: the rank that raised it
 * ({@link #rank()}), the operation it was in ({@link #operation()}, e.g. {@code "all_sum float32[1024]"}), the
 * group ({@link #group()}: {@code world} or a split's label) and the operation's sequence number in that group
 * ({@link #sequence()}, the number the flight recorder and trace events show). A backend sets what it knows;
 * {@link Group} fills in the rest for errors that end one of its operations.
 */
public class DistributedException extends RuntimeException {
    private int rank;
    private String operation;
    private String group;          // set once, by the constructor or by Group
    private long sequence = -1;

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

    /** The group the failed operation ran on: {@code world}, or a split's {@code world/split@SEQ(color=C)}. */
    public Optional<String> group() { return Optional.ofNullable(group); }

    /** The failed operation's sequence number in its group (from 0, in issue order; the same operation has the same number on every rank). */
    public OptionalLong sequence() { return sequence < 0 ? OptionalLong.empty() : OptionalLong.of(sequence); }

    /**
     * The facts of the operation this error ended (called by {@link OperationQueue}): the group, the sequence number and
     * the call as the group describes it ({@code all_sum float32[1024]}, more than a backend knows); the rank where the
     * backend left it unset.
     */
    final void fillIn(int rank, String group, long sequence, String operation) {
        if (this.rank < 0) this.rank = rank;
        if (this.group == null) this.group = group;
        if (this.sequence < 0) this.sequence = sequence;
        this.operation = operation;
    }
}
