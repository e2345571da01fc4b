package dev.jdist.spi;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * What a jdist rank says about itself when it meets the others (the rendezvous record, the agreement check):
 * the release it was built from and the version of the protocols jdist ranks speak among themselves.
 */
public final class JdistVersion {

    /**
     * The version of everything jdist ranks exchange beyond MLX's bytes: the rendezvous store's wire, the
     * start-up record, the ring's jdist extensions (authentication, split, sum_scatter). Raised whenever one of
     * them changes incompatibly; ranks with different values refuse to form a group.
     */
    public static final int WIRE_PROTOCOL = 1;

    private static final String RELEASE = readRelease();

    private JdistVersion() {}

    /** The jdist release ({@code 0.1.0-SNAPSHOT}), or {@code "unknown"} when the classes were not built by Maven. */
    public static String release() { return RELEASE; }

    private static String readRelease() {
        try (InputStream in = JdistVersion.class.getResourceAsStream("jdist-version.properties")) {
            if (in == null) return "unknown";
            Properties p = new Properties();
            p.load(in);
            String v = p.getProperty("version", "unknown").strip();
            return v.isEmpty() || v.startsWith("${") ? "unknown" : v;
        } catch (IOException e) {
            return "unknown";
        }
    }
}
