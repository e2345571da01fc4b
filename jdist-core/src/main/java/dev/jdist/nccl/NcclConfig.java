package dev.jdist.nccl;

import dev.jdist.ConfigException;

import java.util.Map;
import java.util.Optional;

/**
 * The nccl backend's environment (spec §6.1): where rank 0 serves the NCCL unique id, this
 * process's rank, the world size and how long ranks &gt; 0 keep retrying the bootstrap.
 *
 * @param hostIp    {@code NCCL_HOST_IP}: rank 0's address (rank 0 binds it; the others connect to it)
 * @param port      {@code NCCL_PORT}
 * @param rank      {@code MLX_RANK}
 * @param worldSize {@code MLX_WORLD_SIZE}
 * @param timeoutMs {@code MLX_NCCL_TIMEOUT}, default 300000
 * @param debugInfo whether {@code NCCL_DEBUG=INFO} (then the bootstrap's duration is logged)
 */
record NcclConfig(String hostIp, int port, int rank, int worldSize, long timeoutMs, boolean debugInfo) {

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
            try {
                timeout = Long.parseLong(t.strip());
            } catch (NumberFormatException e) {
                throw new ConfigException(TIMEOUT + "=" + t + " is not a whole number of milliseconds");
            }
            if (timeout < 0) throw new ConfigException(TIMEOUT + "=" + t + " must not be negative (milliseconds)");
        }
        return Optional.of(new NcclConfig(host, port, rank, size, timeout, "INFO".equalsIgnoreCase(env.get("NCCL_DEBUG"))));
    }

    private static int parseInt(Map<String, String> env, String name) {
        String v = env.get(name).strip();
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new ConfigException(name + "=" + env.get(name) + " is not a whole number");
        }
    }
}
