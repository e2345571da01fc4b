package dev.jdist;

import java.util.Optional;
import java.util.OptionalInt;

/**
 * A peer closed, reset or stopped answering a connection the group depends on, or the job's liveness watch found it
 * gone ({@link PeerUnresponsiveException}); the group is broken from then on. {@link #peer()} and {@link #host()} name
 * the rank that was lost where it is known (for a failure that travelled round a ring, the rank where it began).
 */
public class PeerLostException extends DistributedException {
    private final int peer;
    private String host;

    public PeerLostException(String message) { this(message, null, -1, -1, null); }

    public PeerLostException(String message, Throwable cause) { this(message, cause, -1, -1, null); }

    /**
     * @param rank      the rank reporting the loss, or -1
     * @param peer      the rank that was lost, or -1 when the backend cannot tell which
     * @param operation the operation in progress, or null
     */
    public PeerLostException(String message, Throwable cause, int rank, int peer, String operation) {
        this(message, cause, rank, peer, null, operation);
    }

    /**
     * @param host where the lost peer ran, for people: {@code node3 (pid 4711, 10.0.0.3)} or its address; null when unknown
     */
    public PeerLostException(String message, Throwable cause, int rank, int peer, String host, String operation) {
        super(message, cause, rank, operation);
        this.peer = peer;
        this.host = host;
    }

    /** The rank that was lost, when the backend can tell. */
    public OptionalInt peer() { return peer < 0 ? OptionalInt.empty() : OptionalInt.of(peer); }

    /** Where the lost peer ran ({@code node3 (pid 4711, 10.0.0.3)}, or its address), when known. */
    public Optional<String> host() { return Optional.ofNullable(host); }

    /** The lost peer's host as the job's table describes it (name, pid, address), which says more than a backend can. */
    final void describeHost(String where) {
        host = where;
    }
}
