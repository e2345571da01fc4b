package dev.jdist.nccl;

import dev.jdist.ConfigException;
import dev.jdist.spi.JdistTimeout;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The nccl backend's environment (docs/reference/collectives.md §6.1): where rank 0 serves the NCCL unique id, this
 * process's rank, the world size and how long ranks &gt; 0 keep retrying the bootstrap.
 *
 * @param hostIp    {@code NCCL_HOST_IP}: rank 0's address (rank 0 binds it; the others connect to it)
 * @param port      {@code NCCL_PORT}
 * @param rank      {@code MLX_RANK}
 * @param worldSize {@code MLX_WORLD_SIZE}
 * @param timeoutMs {@code MLX_NCCL_TIMEOUT}, default 300000: how long the unique-id bootstrap retries
 * @param debugInfo whether {@code NCCL_DEBUG=INFO} (then the bootstrap's duration is logged)
 * @param deadline  {@code JDIST_TIMEOUT} ({@link JdistTimeout}): how long communicator creation and each
 *                  operation may go without completing before jdist aborts the communicator
 */
record NcclConfig(String hostIp, int port, int rank, int worldSize, long timeoutMs, boolean debugInfo, Duration deadline) {

    /** With the default deadline. */
    NcclConfig(String hostIp, int port, int rank, int worldSize, long timeoutMs, boolean debugInfo) {
        this(hostIp, port, rank, worldSize, timeoutMs, debugInfo, JdistTimeout.DEFAULT);
    }

    static final String HOST_IP = "NCCL_HOST_IP";
    static final String PORT = "NCCL_PORT";
    static final String RANK = "MLX_RANK";
    static final String WORLD_SIZE = "MLX_WORLD_SIZE";
    static final String TIMEOUT = "MLX_NCCL_TIMEOUT";
    static final long DEFAULT_TIMEOUT_MS = 300_000;

    /**
     * Reads the environment.
     *
     * @return empty when any of the four required variables is unset or empty and {@code strict} is false
     * @throws ConfigException when one is missing and {@code strict}, or when a value is malformed
     *         (whatever {@code strict} is: the backend was clearly meant to be used)
     */
    static Optional<NcclConfig> fromEnv(Map<String, String> env, boolean strict) {
        for (String name : new String[] {HOST_IP, PORT, RANK, WORLD_SIZE}) {
            String v = env.get(name);
            if (v == null || v.isBlank()) {
                if (!strict) return Optional.empty();
                throw new ConfigException("the nccl backend needs " + name + " (it is " + (v == null ? "unset" : "empty")
                        + "); it needs NCCL_HOST_IP, NCCL_PORT, MLX_RANK and MLX_WORLD_SIZE — start the program with "
                        + "`jdist launch --backend nccl` or set all four");
            }
        }
        String host = env.get(HOST_IP).strip();
        int port = parseInt(env, PORT);
        if (port < 1 || port > 65535) {
            throw new ConfigException(PORT + "=" + env.get(PORT) + " is not a TCP port; use 1..65535");
        }
        int size = parseInt(env, WORLD_SIZE);
        if (size < 1) throw new ConfigException(WORLD_SIZE + "=" + env.get(WORLD_SIZE) + " must be at least 1");
        int rank = parseInt(env, RANK);
        if (rank < 0 || rank >= size) {
            throw new ConfigException(RANK + "=" + rank + " is outside the world of " + WORLD_SIZE + "=" + size
                    + " processes; valid ranks are 0.." + (size - 1));
        }
        long timeout = DEFAULT_TIMEOUT_MS;
        String t = env.get(TIMEOUT);
        if (t != null && !t.isBlank()) {
            String v = t.strip();
            if (v.startsWith("-")) throw new ConfigException(TIMEOUT + "=" + t + " must not be negative (milliseconds)");
            timeout = digits(v, Long.MAX_VALUE, TIMEOUT + "=" + t + " is not a whole number of milliseconds");
        }
        Duration deadline = JdistTimeout.parse(env.get(JdistTimeout.VARIABLE));
        return Optional.of(new NcclConfig(host, port, rank, size, timeout, "INFO".equalsIgnoreCase(env.get("NCCL_DEBUG")),
                deadline));
    }

    private static int parseInt(Map<String, String> env, String name) {
        return (int) digits(env.get(name).strip(), Integer.MAX_VALUE, name + "=" + env.get(name) + " is not a whole number "
                + "(decimal digits 0-9, at most " + Integer.MAX_VALUE + ")");
    }

    /** Decimal ASCII digits only (Long.parseLong would also take a sign and other scripts' digits), at most {@code max}. */
    private static long digits(String v, long max, String error) {
        if (v.isEmpty() || v.length() > 19 || !v.chars().allMatch(c -> c >= '0' && c <= '9')) throw new ConfigException(error);
        try {
            long n = Long.parseLong(v);
            if (n <= max) return n;
        } catch (NumberFormatException e) {
            // beyond Long.MAX_VALUE
        }
        throw new ConfigException(error);
    }
}
