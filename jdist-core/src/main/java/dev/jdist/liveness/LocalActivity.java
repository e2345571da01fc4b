package dev.jdist.liveness;

import dev.jdist.OperationFingerprint;

/** What this rank's group is doing, as its heartbeat reports it: read by the watch's thread, written by the group's. */
public interface LocalActivity {

    /** The operation running now, or null. */
    OperationFingerprint running();

    /** The last operation that finished, or null. */
    OperationFingerprint lastCompleted();

    /** The last few collectives started (running or finished), any order. */
    java.util.List<OperationFingerprint> recentCollectives();

    /** {@link System#nanoTime()} when {@link #running()} or {@link #lastCompleted()} last changed. */
    long changedAtNanos();
}
