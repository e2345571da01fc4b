package dev.jdist.liveness;

import dev.jdist.ConfigException;
import dev.jdist.spi.JdistTimeout;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * What the liveness watch reads from the environment, once, before anything is sent.
 *
 * @param heartbeat        {@code JDIST_HEARTBEAT}: the bound within which a lost peer is reported on every rank (default
 *                         10 s); null when {@code off}
 * @param detail           {@code JDIST_DEBUG=detail}: compare every operation's fingerprint before it moves data
 * @param progressDeadline {@code JDIST_TIMEOUT} when set, else 30 minutes: how long an operation waits without progress
 */
public record LivenessSettings(Duration heartbeat, boolean detail, Duration progressDeadline) {
    public static final String HEARTBEAT = "JDIST_HEARTBEAT";
    public static final String DEBUG = "JDIST_DEBUG";
    public static final Duration DEFAULT_HEARTBEAT = Duration.ofSeconds(10);
    static final Duration MIN_HEARTBEAT = Duration.ofMillis(200);
    static final Duration MAX_HEARTBEAT = Duration.ofHours(1);

    /** Reads the settings; a bad value is a {@link ConfigException} naming the variable. */
    public static LivenessSettings fromEnvironment(Map<String, String> env) {
        return new LivenessSettings(heartbeat(env.get(HEARTBEAT)), detail(env.get(DEBUG)), JdistTimeout.watchedProgress(env.get(JdistTimeout.VARIABLE)));
    }

    /** {@code JDIST_HEARTBEAT}: a duration as {@code JDIST_TIMEOUT} takes it, 200 ms to 1 h, or {@code off}; unset: 10 s. */
    static Duration heartbeat(String value) {
        if (value != null && value.strip().equalsIgnoreCase("off")) return null;
        Duration d = JdistTimeout.parse(HEARTBEAT, value, DEFAULT_HEARTBEAT);
        if (d.compareTo(MIN_HEARTBEAT) < 0 || d.compareTo(MAX_HEARTBEAT) > 0) {
            throw new ConfigException(HEARTBEAT + "=\"" + value + "\" is outside 200ms..1h: it is how soon a lost peer is "
                    + "reported on every rank (heartbeats go out ten times as often); use e.g. 10s, or off to switch the watch off");
        }
        return d;
    }

    /** {@code JDIST_DEBUG}: unset, empty, {@code off} or {@code info} (the default checks), or {@code detail}. */
    static boolean detail(String value) {
        if (value == null) return false;
        String v = value.strip().toLowerCase(Locale.ROOT);
        return switch (v) {
            case "", "off", "info" -> false;
            case "detail" -> true;
            default -> throw new ConfigException(DEBUG + "=\"" + value + "\" is not a debug level: use detail (compare every "
                    + "collective's operation, dtype and shape across ranks before it moves data), info or off (the default)");
        };
    }

    /** Whether the heartbeat runs. */
    public boolean watching() { return heartbeat != null; }

    /** Heartbeats go out ten times per bound: 1 s for the default 10 s. */
    Duration interval() { return heartbeat.dividedBy(10); }

    /** Silence after which a peer is declared lost: 80 % of the bound, so that the report lands within it. */
    Duration silenceLimit() { return heartbeat.multipliedBy(8).dividedBy(10); }

    /** How long a rank whose group broke waits for the others' word on why: two heartbeat intervals, 0.5 to 3 s. */
    Duration grace() {
        Duration g = interval().multipliedBy(2);
        if (g.compareTo(Duration.ofMillis(500)) < 0) return Duration.ofMillis(500);
        return g.compareTo(Duration.ofSeconds(3)) > 0 ? Duration.ofSeconds(3) : g;
    }

    /** {@code "10 s"}, {@code "2.5 s"}: for messages. */
    static String seconds(Duration d) {
        double s = d.toNanos() / 1e9;
        if (s == Math.rint(s)) return (long) s + " s";
        return String.format(Locale.ROOT, "%.1f s", s);
    }
}
