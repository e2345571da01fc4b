package dev.jdist.ring;

/** {@code MLX_RING_VERBOSE}: connection progress on stderr with a {@code [ring]} prefix, as MLX does. */
final class RingLog {
    private final boolean verbose;
    private final String who;

    RingLog(boolean verbose, String who) {
        this.verbose = verbose;
        this.who = who;
    }

    boolean verbose() { return verbose; }

    void log(String message) {
        if (verbose) System.err.println("[ring] " + who + ": " + message);
    }
}
