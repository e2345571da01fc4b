package dev.jdist;

import java.util.OptionalInt;

/** A peer closed, reset or stopped answering a connection the group depends on; the group is broken from then on. */
public class PeerLostException extends DistributedException {
    private final int peer;

    public PeerLostException(String message) { this(message, null, -1, -1, null); }

    public PeerLostException(String message, Throwable cause) { this(message, cause, -1, -1, null); }

    /**
     * @param rank      the rank reporting the loss, or -1
     * @param peer      the rank that was lost, or -1 when the backend cannot tell which
     * @param operation the operation in progress, or null
     */
    public PeerLostException(String message, Throwable cause, int rank, int peer, String operation) {
        super(message, cause, rank, operation);
        this.peer = peer;
    }

    /** The rank that was lost, when the backend can tell. */
    public OptionalInt peer() { return peer < 0 ? OptionalInt.empty() : OptionalInt.of(peer); }
}
