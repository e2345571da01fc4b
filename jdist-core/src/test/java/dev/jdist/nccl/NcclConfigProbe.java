package dev.jdist.nccl;

import java.util.Map;

/** For the configuration fuzzer (another package): reads the nccl environment as the backend does. */
public final class NcclConfigProbe {
    private NcclConfigProbe() {}

    /** True when configured, false when not (non-strict); a ConfigException when wrong. */
    public static boolean fromEnv(Map<String, String> env, boolean strict) {
        return NcclConfig.fromEnv(env, strict).isPresent();
    }
}
