package dev.jdist.nccl;

import dev.jdist.ConfigException;
import dev.jdist.Distributed;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class NcclConfigTest {

    static Map<String, String> full() {
        Map<String, String> env = new HashMap<>();
        env.put("NCCL_HOST_IP", "127.0.0.1");
        env.put("NCCL_PORT", "12345");
        env.put("MLX_RANK", "1");
        env.put("MLX_WORLD_SIZE", "4");
        return env;
    }

    @AfterEach
    void reset() { Distributed.reset(); }

    @Test
    void readsTheFourVariablesAndDefaultsTheTimeout() {
        NcclConfig c = NcclConfig.fromEnv(full(), true).orElseThrow();
        assertThat(c).isEqualTo(new NcclConfig("127.0.0.1", 12345, 1, 4, 300_000, false));
        Map<String, String> env = full();
        env.put("MLX_NCCL_TIMEOUT", "2500");
        env.put("NCCL_DEBUG", "INFO");
        NcclConfig d = NcclConfig.fromEnv(env, false).orElseThrow();
        assertThat(d.timeoutMs()).isEqualTo(2500);
        assertThat(d.debugInfo()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"NCCL_HOST_IP", "NCCL_PORT", "MLX_RANK", "MLX_WORLD_SIZE"})
    void anyRequiredVariableUnsetOrEmptyMeansNotConfiguredAndStrictNamesIt(String name) {
        Map<String, String> unset = full();
        unset.remove(name);
        Map<String, String> empty = full();
        empty.put(name, "");
        for (Map<String, String> env : new Map[] {unset, empty}) {
            assertThat(NcclConfig.fromEnv(env, false)).isEmpty();
            assertThatThrownBy(() -> NcclConfig.fromEnv(env, true)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(name);
            // the backend's non-strict init is empty before any library is looked for
            assertThat(new NcclBackend(Map.of()).init(false, env)).isEmpty();
            assertThatThrownBy(() -> new NcclBackend(Map.of()).init(true, env)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(name);
        }
    }

    @Test
    void strictInitWithoutEnvironmentThroughDistributedNamesAVariable() {
        assertThatThrownBy(() -> Distributed.init(true, "nccl", Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("NCCL_HOST_IP");
        assertThat(Distributed.init(false, "nccl", Map.of()).size()).isEqualTo(1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"NCCL_PORT=12x", "NCCL_PORT=0", "NCCL_PORT=70000", "MLX_RANK=one", "MLX_RANK=-1",
        "MLX_RANK=4", "MLX_WORLD_SIZE=0", "MLX_WORLD_SIZE=2.5", "MLX_NCCL_TIMEOUT=soon", "MLX_NCCL_TIMEOUT=-5"})
    void malformedValuesAreConfigErrorsNamingTheVariableEvenWhenNotStrict(String assignment) {
        String[] kv = assignment.split("=", 2);
        Map<String, String> env = full();
        env.put(kv[0], kv[1]);
        assertThatThrownBy(() -> NcclConfig.fromEnv(env, false)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(kv[0]).hasMessageContaining(kv[1]);
    }
}
