package dev.jdist.jaccl;

/** Frame classes (spec collectives.md §4.4): {@code F(c) = 4096 * 2^c}, {@code c = 0..7}, two pipeline slots each. */
public final class Frames {
    public static final int CLASSES = 8;
    public static final int SLOTS = 2;

    private Frames() {}

    /** Bytes of a frame of class {@code c}. */
    public static int size(int c) { return 4096 << c; }

    /** The class for a message of {@code b} bytes (the macOS 26.3 rule, used by jdist on Linux): the largest c in 7..1 with b ≥ F(c), else 0. */
    public static int classFor(long b) {
        for (int c = CLASSES - 1; c >= 1; c--) if (b >= size(c)) return c;
        return 0;
    }

    /** Work-request id: {@code (kind << 16) | (slot << 8) | peerOrDirection}; kind 1 = send, 2 = receive. */
    public static long wrId(int kind, int slot, int peerOrDirection) {
        return ((long) kind << 16) | ((long) slot << 8) | peerOrDirection;
    }

    public static final int KIND_SEND = 1;
    public static final int KIND_RECV = 2;

    public static int kindOf(long wrId) { return (int) (wrId >>> 16) & 0xFF; }

    public static int slotOf(long wrId) { return (int) (wrId >>> 8) & 0xFF; }
}
