package dev.jdist.jaccl;

/** Frame classes (docs/reference/collectives.md §4.4): {@code F(c) = 4096 * 2^c}, {@code c = 0..7}, two pipeline slots each. */
public final class Frames {
    public static final int CLASSES = 8;
    public static final int SLOTS = 2;

    private Frames() {}

    /** Bytes of a frame of class {@code c}. */
    public static int size(int c) { return 4096 << c; }

    /** Whether this host uses frame classes above 0: everywhere except macOS before 26.3 (MLX's rule). */
    static final boolean LARGE_FRAMES = largeFrames(System.getProperty("os.name", ""), System.getProperty("os.version", ""));

    static boolean largeFrames(String osName, String osVersion) {
        if (!osName.toLowerCase(java.util.Locale.ROOT).contains("mac")) return true;
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)(?:\\.(\\d+))?").matcher(osVersion);
        if (!m.lookingAt()) return true;
        int major = Integer.parseInt(m.group(1)), minor = m.group(2) == null ? 0 : Integer.parseInt(m.group(2));
        return major > 26 || (major == 26 && minor >= 3);
    }

    /**
     * The class for a message of {@code b} bytes: with macOS ≥ 26.3 (and on Linux) the largest c in 7..1
     * with b ≥ F(c), else 0; on macOS 26.2 always 0. Both peers evaluate the same {@code b}.
     */
    public static int classFor(long b) {
        return classFor(b, LARGE_FRAMES);
    }

    static int classFor(long b, boolean largeFrames) {
        if (!largeFrames) return 0;
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
