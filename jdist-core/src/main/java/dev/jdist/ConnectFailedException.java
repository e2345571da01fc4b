package dev.jdist;

/** A peer could not be reached while the group was being formed. */
public class ConnectFailedException extends DistributedException {
    public ConnectFailedException(String message) { super(message); }
    public ConnectFailedException(String message, Throwable cause) { super(message, cause); }
}
