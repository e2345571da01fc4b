package dev.jdist.jaccl;

import dev.jdist.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JacclConfigTest {
    static final String MESH4 = "[[null,\"rdma_en5\",\"rdma_en4\",\"rdma_en3\"],[\"rdma_en5\",null,\"rdma_en3\",\"rdma_en4\"],"
            + "[\"rdma_en4\",\"rdma_en3\",null,\"rdma_en5\"],[\"rdma_en3\",\"rdma_en4\",\"rdma_en5\",null]]";

    @TempDir Path dir;

    Map<String, String> env(String matrix, String rank) throws IOException {
        Path f = dir.resolve("devices-" + System.nanoTime() + ".json");
        Files.writeString(f, matrix);
        Map<String, String> env = new HashMap<>();
        env.put("MLX_RANK", rank);
        env.put("MLX_IBV_DEVICES", f.toString());
        env.put("MLX_JACCL_COORDINATOR", "127.0.0.1:32323");
        return env;
    }

    @Test
    void meshFromMlxVariables() throws IOException {
        JacclConfig c = JacclConfig.fromEnv(env(MESH4, "2"), true, false).orElseThrow();
        assertThat(c.rank()).isEqualTo(2);
        assertThat(c.size()).isEqualTo(4);
        assertThat(c.topology()).isEqualTo(JacclConfig.Topology.MESH);
        assertThat(c.coordinatorHost()).isEqualTo("127.0.0.1");
        assertThat(c.coordinatorPort()).isEqualTo(32323);
        assertThat(c.devices().devices(2, 0)).containsExactly("rdma_en4");
        assertThat(c.qpMode()).isEqualTo(JacclConfig.QpMode.UC);
        assertThat(c.timeout()).isEqualTo(JacclConfig.DEFAULT_TIMEOUT);
    }

    @Test
    void jacclNamesWinOverMlxNames() throws IOException {
        Map<String, String> env = env(MESH4, "2");
        env.put("JACCL_RANK", "3");
        env.put("JACCL_COORDINATOR", "10.0.0.9:4000");
        JacclConfig c = JacclConfig.fromEnv(env, true, false).orElseThrow();
        assertThat(c.rank()).isEqualTo(3);
        assertThat(c.coordinator()).isEqualTo("10.0.0.9:4000");
    }

    @Test
    void fullMeshIsAlsoARingWhenPreferred() throws IOException {
        Map<String, String> env = env(MESH4, "0");
        env.put("MLX_JACCL_RING", "1");
        JacclConfig c = JacclConfig.fromEnv(env, true, false).orElseThrow();
        assertThat(c.topology()).isEqualTo(JacclConfig.Topology.RING);
        assertThat(c.devices().ringWires()).isEqualTo(1);
    }

    @Test
    void ringWithTwoWiresIsChosenWhenNoMeshIsValid() throws IOException {
        // 3 ranks, two devices each way; neighbours only (for n=3 everyone is a neighbour)
        String ring = "[[null,[\"a\",\"b\"],[\"c\",\"d\"]],[[\"a\",\"b\"],null,[\"e\",\"f\"]],[[\"c\",\"d\"],[\"e\",\"f\"],null]]";
        JacclConfig c = JacclConfig.fromEnv(env(ring, "1"), true, false).orElseThrow();
        assertThat(c.topology()).isEqualTo(JacclConfig.Topology.MESH); // arrays are non-empty: also a valid mesh
        String ring4 = "[[null,[\"a\",\"b\"],null,[\"c\",\"d\"]],[[\"a\",\"b\"],null,[\"e\",\"f\"],null],"
                + "[null,[\"e\",\"f\"],null,[\"g\",\"h\"]],[[\"c\",\"d\"],null,[\"g\",\"h\"],null]]";
        JacclConfig r = JacclConfig.fromEnv(env(ring4, "3"), true, false).orElseThrow();
        assertThat(r.topology()).isEqualTo(JacclConfig.Topology.RING);
        assertThat(r.devices().ringWires()).isEqualTo(2);
    }

    @Test
    void unequalRingCountsAreNotARing() {
        DeviceMatrix m = DeviceMatrix.parse("[[null,[\"a\",\"b\"],null],[\"a\",null,\"b\"],[null,\"c\",null]]", "t");
        assertThat(m.ringProblem()).get().asString().contains("[0][2]");
        assertThat(m.meshProblem()).get().asString().contains("[0][2]");
    }

    @Test
    void mlxAcceptsZeroWiresJdistDoesNot() {
        DeviceMatrix m = DeviceMatrix.parse("[[null,[]],[[],null]]", "t");
        assertThat(m.ringProblem()).get().asString().contains("[0][1] is empty");
    }

    @Test
    void invalidTopologyIsNotConfiguredButStrictSaysWhy() throws IOException {
        Map<String, String> env = env("[[\"x\",\"y\"],[null,null]]", "0");
        assertThat(JacclConfig.fromEnv(env, false, false)).isEmpty();
        assertThatThrownBy(() -> JacclConfig.fromEnv(env, true, false)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("neither a valid mesh").hasMessageContaining("[0][0]");
    }

    @Test
    void missingVariablesAreNotConfiguredAndStrictNamesAllThree() {
        assertThat(JacclConfig.fromEnv(Map.of(), false, false)).isEmpty();
        assertThatThrownBy(() -> JacclConfig.fromEnv(Map.of("MLX_RANK", "1"), true, false))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MLX_RANK=1").hasMessageContaining("MLX_IBV_DEVICES unset")
                .hasMessageContaining("MLX_JACCL_COORDINATOR unset");
    }

    @Test
    void customSideChannelNeedsNoCoordinator() throws IOException {
        Map<String, String> env = env(MESH4, "1");
        env.remove("MLX_JACCL_COORDINATOR");
        assertThat(JacclConfig.fromEnv(env, false, false)).isEmpty();
        assertThat(JacclConfig.fromEnv(env, true, true).orElseThrow().coordinator()).isNull();
    }

    @Test
    void malformedRanksAreErrorsEvenWhenNotStrict() throws IOException {
        for (String bad : new String[]{"-1", "1x", "abc", " ", "0x1", "+2", "4"}) {
            Map<String, String> env = env(MESH4, bad);
            if (bad.isBlank()) {
                assertThat(JacclConfig.fromEnv(env, false, false)).isEmpty();
                continue;
            }
            assertThatThrownBy(() -> JacclConfig.fromEnv(env, false, false)).as(bad)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("MLX_RANK");
        }
    }

    @Test
    void badCoordinatorTimeoutAndQpModeAreNamed() throws IOException {
        Map<String, String> env = env(MESH4, "0");
        env.put("MLX_JACCL_COORDINATOR", "10.0.0.1");
        assertThatThrownBy(() -> JacclConfig.fromEnv(env, false, false)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("MLX_JACCL_COORDINATOR='10.0.0.1'");
        env.put("MLX_JACCL_COORDINATOR", "10.0.0.1:70000");
        assertThatThrownBy(() -> JacclConfig.fromEnv(env, false, false)).hasMessageContaining("1..65535");
        env.put("MLX_JACCL_COORDINATOR", "[fe80::1]:5000");
        assertThat(JacclConfig.fromEnv(env, false, false).orElseThrow().coordinatorHost()).isEqualTo("fe80::1");
        env.put("JDIST_TIMEOUT", "soon");
        assertThatThrownBy(() -> JacclConfig.fromEnv(env, false, false)).hasMessageContaining("JDIST_TIMEOUT=\"soon\"");
        env.put("JDIST_TIMEOUT", "2.5");
        env.put("JDIST_JACCL_QP", "RC");
        JacclConfig c = JacclConfig.fromEnv(env, false, false).orElseThrow();
        assertThat(c.timeout()).isEqualTo(Duration.ofMillis(2500));
        assertThat(c.qpMode()).isEqualTo(JacclConfig.QpMode.RC);
        env.put("JDIST_JACCL_QP", "ud");
        assertThatThrownBy(() -> JacclConfig.fromEnv(env, false, false)).hasMessageContaining("JDIST_JACCL_QP='ud'");
    }

    @Test
    void timeoutUnits() {
        assertThat(JacclConfig.parseTimeout("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(JacclConfig.parseTimeout("30s")).isEqualTo(Duration.ofSeconds(30));
        assertThat(JacclConfig.parseTimeout("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(JacclConfig.parseTimeout(null)).isEqualTo(JacclConfig.DEFAULT_TIMEOUT);
        assertThatThrownBy(() -> JacclConfig.parseTimeout("0")).isInstanceOf(ConfigException.class);
    }

    @Test
    void shapeErrorsAreConfigErrorsNamingTheItem() {
        String[][] cases = {
                {"{}", "top level"},
                {"[]", "no rows"},
                {"[[null,\"a\"],[\"a\"]]", "row 1 has 1 items"},
                {"[[null,1],[\"a\",null]]", "item [0][1]"},
                {"[[null,[1]],[\"a\",null]]", "item [0][1]"},
                {"[[null,\"\"],[\"a\",null]]", "empty device name"},
                {"[1,2]", "row 0"},
                {"not json", "not valid JSON"},
        };
        for (String[] c : cases) {
            assertThatThrownBy(() -> DeviceMatrix.parse(c[0], "f.json")).as(c[0])
                    .isInstanceOf(ConfigException.class).hasMessageContaining(c[1]).hasMessageContaining("f.json");
        }
    }

    @Test
    void missingDeviceFileIsNamed() {
        Map<String, String> env = new HashMap<>(Map.of("MLX_RANK", "0", "MLX_IBV_DEVICES", dir.resolve("nope.json").toString(),
                "MLX_JACCL_COORDINATOR", "127.0.0.1:1"));
        assertThatThrownBy(() -> JacclConfig.fromEnv(env, false, false)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("nope.json").hasMessageContaining("MLX_IBV_DEVICES");
    }

    @Test
    void limits() throws IOException {
        StringBuilder nine = new StringBuilder("[");
        for (int q = 0; q < 9; q++) {
            nine.append(q == 0 ? "[" : ",[");
            for (int p = 0; p < 9; p++) nine.append(p == 0 ? "" : ",").append(p == q ? "null" : "\"d\"");
            nine.append("]");
        }
        nine.append("]");
        assertThatThrownBy(() -> JacclConfig.fromEnv(env(nine.toString(), "0"), false, false))
                .isInstanceOf(ConfigException.class).hasMessageContaining("at most 8").hasMessageContaining("MLX_JACCL_RING=1");
        Map<String, String> ringEnv = env(nine.toString(), "0");
        ringEnv.put("MLX_JACCL_RING", "");
        assertThat(JacclConfig.fromEnv(ringEnv, false, false).orElseThrow().topology()).isEqualTo(JacclConfig.Topology.RING);
        String five = "[[null,[\"a\",\"b\",\"c\",\"d\",\"e\"]],[[\"a\",\"b\",\"c\",\"d\",\"e\"],null]]";
        Map<String, String> fiveEnv = env(five, "0");
        fiveEnv.put("MLX_JACCL_RING", "1");
        assertThatThrownBy(() -> JacclConfig.fromEnv(fiveEnv, false, false)).hasMessageContaining("at most 4");
    }
}
