package dev.jdist;

import java.time.Duration;
import java.util.Optional;

/** Connection set-up or an operation made no progress within the deadline ({@code JDIST_TIMEOUT}). */
public class DeadlineExceededException extends DistributedException {
    private final Duration deadline;

    public DeadlineExceededException(String message) { this(message, null, -1, null, null); }

    public DeadlineExceededException(String message, Throwable cause) { this(message, cause, -1, null, null); }

    /**
     * @param rank      the rank that gave up waiting, or -1
     * @param operation what it was waiting for, or null
     * @param deadline  the deadline that passed, or null
     */
    public DeadlineExceededException(String message, Throwable cause, int rank, String operation, Duration deadline) {
        super(message, cause, rank, operation);
        this.deadline = deadline;
    }

    /** The deadline that passed ({@code JDIST_TIMEOUT}), when known. */
    public Optional<Duration> deadline() { return Optional.ofNullable(deadline); }
}
