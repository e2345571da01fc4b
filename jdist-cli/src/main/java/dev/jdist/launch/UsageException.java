package dev.jdist.launch;

/** A bad command line or hostfile: printed as {@code jdist launch: error: MESSAGE} after a usage line, exit 2. */
public final class UsageException extends RuntimeException {
    public UsageException(String message) {
        super(message);
    }
}
