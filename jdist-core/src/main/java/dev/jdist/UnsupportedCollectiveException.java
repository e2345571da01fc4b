package dev.jdist;

/** The backend (or this group) does not support the requested operation or dtype. */
public class UnsupportedCollectiveException extends DistributedException {
    public UnsupportedCollectiveException(String message) { super(message); }
}
