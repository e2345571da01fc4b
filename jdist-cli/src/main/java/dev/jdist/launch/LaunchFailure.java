package dev.jdist.launch;

/** A launcher error that is not a usage error (e.g. no {@code mpirun}): printed as a message, with its exit status. */
public final class LaunchFailure extends RuntimeException {
    private final int exitStatus;

    public LaunchFailure(String message, int exitStatus) {
        super(message);
        this.exitStatus = exitStatus;
    }

    public int exitStatus() {
        return exitStatus;
    }
}
