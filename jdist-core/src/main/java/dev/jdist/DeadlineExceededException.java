package dev.jdist;

/** Connection set-up or an operation made no progress within the deadline ({@code JDIST_TIMEOUT}). */
public class DeadlineExceededException extends DistributedException {
    public DeadlineExceededException(String message) { super(message); }
    public DeadlineExceededException(String message, Throwable cause) { super(message, cause); }
}
