package dev.jdist.spi;

import dev.jdist.ConfigException;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code JDIST_TIMEOUT}: the deadline every backend applies to connection set-up and to the progress of
 * each operation (ring, jaccl: no progress for this long; mpi, nccl: an operation not complete after this
 * long, which ends the MPI job or aborts the NCCL communicator). One parser, so the variable means the same
 * everywhere; each backend reads it once, with the rest of its configuration.
 */
public final class JdistTimeout {
    public static final String VARIABLE = "JDIST_TIMEOUT";
    public static final Duration DEFAULT = Duration.ofSeconds(120);
    /**
     * The progress deadline when the job's liveness watch runs (every rank is jdist, docs/reliability.md): a peer that
     * is alive but not yet in the collective is waited for this long, since a lost one is found by the heartbeat.
     * Connection set-up keeps {@link #DEFAULT}.
     */
    public static final Duration WATCHED_DEFAULT = Duration.ofMinutes(30);
    /**
     * The connection set-up deadline of a ring formed from MLX variables without a job token (MLX peers may be among
     * the ranks): as short as MLX's own connect retries (about 30 s), so that a rank whose peers never start fails soon.
     * Once the ring is connected, such a group waits for progress up to {@link #WATCHED_DEFAULT}, as a watched group does
     * (a killed peer is still found at once, by the end of its connections). {@code JDIST_TIMEOUT} overrides both.
     */
    public static final Duration MLX_SETUP_DEFAULT = Duration.ofSeconds(30);
    private static final Pattern FORM = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)\\s*(ms|s|m)?");
    private static final double MAX_MILLIS = 7 * 24 * 3600_000.0;

    private JdistTimeout() {}

    /** Seconds ({@code 30}, {@code 2.5}) or with a unit ({@code 500ms}, {@code 30s}, {@code 2m}); unset or blank → {@link #DEFAULT}. */
    public static Duration parse(String value) {
        return parse(VARIABLE, value, DEFAULT);
    }

    /** The progress deadline of a group with a liveness watch: {@code JDIST_TIMEOUT} when set, else {@link #WATCHED_DEFAULT}. */
    public static Duration watchedProgress(String value) {
        return parse(VARIABLE, value, WATCHED_DEFAULT);
    }

    /**
     * The same syntax for another variable ({@code JDIST_RENDEZVOUS_TIMEOUT}): unset or blank → {@code fallback};
     * a bad value is a {@link ConfigException} naming {@code variable}.
     */
    public static Duration parse(String variable, String value, Duration fallback) {
        if (value == null || value.isBlank()) return fallback;
        Matcher m = FORM.matcher(value.trim().toLowerCase(Locale.ROOT));
        if (m.matches()) {
            double amount = Double.parseDouble(m.group(1));
            double millis = switch (m.group(2) == null ? "s" : m.group(2)) {
                case "ms" -> amount;
                case "m" -> amount * 60_000;
                default -> amount * 1000;
            };
            if (millis >= 1 && millis <= MAX_MILLIS) return Duration.ofNanos(Math.round(millis * 1e6));
        }
        throw new ConfigException(variable + "=\"" + value + "\" is not a duration: use seconds (30, 2.5) or a unit (500ms, 30s, 2m),"
                + " between 1 ms and 7 days; unset it for the default of " + fallback.toSeconds() + " s");
    }

    /** A deadline as messages print it, in seconds without a unit: {@code 30}, {@code 2.5}, {@code 0.2}. */
    public static String seconds(Duration d) {
        double s = d.toNanos() / 1e9;
        return s == Math.rint(s) ? String.valueOf((long) s) : String.valueOf(s);
    }

    /** A deadline with its unit, to the millisecond: {@code 30 s}, {@code 2.500 s}. */
    public static String secondsWithUnit(Duration d) {
        double s = d.toNanos() / 1e9;
        return s == Math.rint(s) ? (long) s + " s" : String.format(Locale.ROOT, "%.3f s", s);
    }
}
