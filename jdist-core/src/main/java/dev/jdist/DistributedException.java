package dev.jdist;

/** Base of every error a backend raises at run time. Unchecked: collectives sit on the hot path. */
public class DistributedException extends RuntimeException {
    public DistributedException(String message) { super(message); }
    public DistributedException(String message, Throwable cause) { super(message, cause); }
}
