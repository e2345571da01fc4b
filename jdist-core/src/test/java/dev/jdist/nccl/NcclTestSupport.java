package dev.jdist.nccl;

import java.util.HashMap;
import java.util.Map;

/** The environment of one NCCL rank on loopback. */
final class NcclTestSupport {

    private NcclTestSupport() {}

    /** The four docs/reference/collectives.md §6.1 variables for {@code rank} of {@code n} on 127.0.0.1:{@code port}, plus {@code extra}. */
    static Map<String, String> rankEnv(int rank, int n, int port, long timeoutMs, Map<String, String> extra) {
        Map<String, String> env = new HashMap<>(extra);
        env.put("NCCL_HOST_IP", "127.0.0.1");
        env.put("NCCL_PORT", Integer.toString(port));
        env.put("MLX_RANK", Integer.toString(rank));
        env.put("MLX_WORLD_SIZE", Integer.toString(n));
        env.put("MLX_NCCL_TIMEOUT", Long.toString(timeoutMs));
        return env;
    }
}
