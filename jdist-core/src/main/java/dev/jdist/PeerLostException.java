package dev.jdist;

/** A peer closed, reset or stopped answering a connection the group depends on; the group is broken from then on. */
public class PeerLostException extends DistributedException {
    public PeerLostException(String message) { super(message); }
    public PeerLostException(String message, Throwable cause) { super(message, cause); }
}
