package dev.jdist.ring;

import dev.jdist.spi.JdistTimeout;
import dev.jdist.ConfigException;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * What the ring reads from the environment (spec collectives.md §3.1 and §9):
 * {@code MLX_RANK}, {@code MLX_HOSTFILE}, {@code MLX_RING_VERBOSE} (MLX) and the jdist extensions
 * {@code JDIST_TIMEOUT} ({@link JdistTimeout}; default 120 s) and
 * {@code JDIST_JOB_TOKEN} (turns on the connection handshake).
 */
public record RingSettings(int rank, RingHostfile hostfile, boolean verbose, Duration timeout, String jobToken,
                           long spinMicros) {

    public static final String RANK = "MLX_RANK";
    public static final String HOSTFILE = "MLX_HOSTFILE";
    public static final String VERBOSE = "MLX_RING_VERBOSE";
    public static final String TIMEOUT = JdistTimeout.VARIABLE;
    public static final String JOB_TOKEN = "JDIST_JOB_TOKEN";
    public static final String SPIN = "JDIST_RING_SPIN_US";
    /**
     * Default microseconds an operation polls its sockets (yielding the CPU between polls) before
     * sleeping in the selector: 50 on machines with 4 or more CPUs, where the poll answers a small
     * message sooner than a selector wake-up; 0 on smaller machines, where polling ranks would take
     * the CPU from the very peer they wait for.
     */
    /**
     * 50 µs: measured on an idle 2-core machine (docs/benchmarks.md), a short yielding poll halves 4-byte
     * all_sum latency with 2 ranks (≈55 → ≈20 µs) and helps even 4 ranks on 2 cores (≈200 → ≈120 µs),
     * because the poll yields the CPU to the peer it waits for. Hosts crowded with other busy processes may
     * do better with 0.
     */
    public static final long DEFAULT_SPIN_MICROS = 50;
    /** Default deadline for connection set-up and for progress inside one operation. */
    public static final long DEFAULT_TIMEOUT_SECONDS = JdistTimeout.DEFAULT.toSeconds();

    public int size() { return hostfile.size(); }

    public boolean authenticated() { return jobToken != null; }

    /**
     * Reads the settings, or empty when the ring is not configured ({@code MLX_RANK} or
     * {@code MLX_HOSTFILE} unset) and {@code strict} is false.
     */
    public static Optional<RingSettings> fromEnvironment(boolean strict, Map<String, String> env) {
        String rankText = env.get(RANK);
        String hostfileText = env.get(HOSTFILE);
        if (rankText == null || hostfileText == null) {
            if (!strict) return Optional.empty();
            throw new ConfigException("the ring backend is not configured: it needs both " + RANK + " and " + HOSTFILE
                    + " (seen " + RANK + "=" + shown(rankText) + ", " + HOSTFILE + "=" + shown(hostfileText)
                    + "); start the program with `jdist launch`, or set " + RANK + " to this process's rank and "
                    + HOSTFILE + " to the JSON file listing every rank's addresses");
        }
        Duration timeout = parseTimeout(env.get(TIMEOUT));
        int rank = parseRank(rankText);
        if (hostfileText.isEmpty()) {
            throw new ConfigException(HOSTFILE + " is set but empty; set it to the path of the ring hostfile");
        }
        RingHostfile hostfile = RingHostfile.read(Path.of(hostfileText));
        if (rank >= hostfile.size()) {
            throw new ConfigException(RANK + "=" + rank + " is too large for the " + hostfile.size() + "-rank ring in "
                    + hostfileText + "; valid ranks are 0.." + (hostfile.size() - 1));
        }
        String token = env.get(JOB_TOKEN);
        if (token != null && token.isEmpty()) token = null;
        return Optional.of(new RingSettings(rank, hostfile, env.containsKey(VERBOSE), timeout, token, parseSpin(env.get(SPIN))));
    }

    static int parseRank(String text) {
        String t = text;
        if (t.isEmpty() || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new ConfigException(RANK + "=\"" + text + "\" is not a rank: it must be a non-negative decimal integer "
                    + "such as 0, 1, 2");
        }
        try {
            return Integer.parseInt(t);
        } catch (NumberFormatException e) {
            throw new ConfigException(RANK + "=\"" + text + "\" is too large to be a rank");
        }
    }

    static long parseSpin(String text) {
        if (text == null || text.isBlank()) return DEFAULT_SPIN_MICROS;
        try {
            long v = Long.parseLong(text.strip());
            if (v >= 0 && v <= 1_000_000) return v;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new ConfigException(SPIN + "=\"" + text + "\" is not a number of microseconds in 0..1000000 (0 = never poll, "
                + "always sleep in the selector); unset it for the default of " + DEFAULT_SPIN_MICROS);
    }

    static Duration parseTimeout(String text) {
        return JdistTimeout.parse(text);
    }

    private static String shown(String v) { return v == null ? "<unset>" : "\"" + v + "\""; }
}
