package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JacclBackendTest {

    @Test
    void registeredAndAvailabilityNeverThrows() {
        assertThat(new JacclBackend().name()).isEqualTo("jaccl");
        assertThat(Verbs.problem("libjdist-no-such-verbs.so.9")).get().asString().contains("libjdist-no-such-verbs.so.9");
        assertThat(Verbs.problem("libc.so.6")).get().asString().contains("lacks").contains("ibv_get_device_list");
        boolean verbsInstalled = Verbs.problem(Verbs.defaultLibrary()).isEmpty();
        assertThat(new JacclBackend().isAvailable()).isEqualTo(verbsInstalled || System.getenv("JDIST_JACCL_LIB") != null);
        assertThat(Distributed.isAvailable("jaccl")).isEqualTo(new JacclBackend().isAvailable());
    }

    @Test
    void notConfiguredIsEmptyUnlessStrict() {
        assertThat(new JacclBackend().init(false, Map.of())).isEmpty();
        assertThatThrownBy(() -> new JacclBackend().init(true, Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("MLX_RANK").hasMessageContaining("MLX_IBV_DEVICES").hasMessageContaining("MLX_JACCL_COORDINATOR");
    }

    /**
     * Goes through the real libibverbs (device list, device names) up to opening the device the file
     * names; on a host without that device the error names it and the devices that exist.
     */
    @Test
    @Timeout(60)
    void aDeviceTheHostLacksIsAConfigErrorNamingIt(@TempDir Path dir) throws Exception {
        Requirements.require(Verbs.problem(Verbs.defaultLibrary()).isEmpty(),
                "libibverbs (" + Verbs.defaultLibrary() + ") is not installed; install libibverbs-dev / ibverbs-providers");
        List<String> present = VerbsTransport.deviceNames(Verbs.load(Verbs.defaultLibrary()));
        String absent = "jdist_absent_dev";
        Path f = dir.resolve("devices.json");
        Files.writeString(f, "[[null,\"" + absent + "\"],[\"" + absent + "\",null]]");
        Map<String, String> env = new HashMap<>(Map.of("MLX_RANK", "0", "MLX_IBV_DEVICES", f.toString()));
        dev.jdist.AllGatherFactory echo = (rank, size) -> (src, b) -> {
            byte[] out = new byte[size * b];
            for (int q = 0; q < size; q++) System.arraycopy(src, 0, out, q * b, b);
            return out;
        };
        assertThatThrownBy(() -> new JacclBackend().init(true, env, echo)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(absent).hasMessageContaining(present.size() + " device(s)").hasMessageContaining("ibv_devices");
    }

    @Test
    @Timeout(60)
    void distributedInitWithACustomSideChannel(@TempDir Path dir) throws Exception {
        dev.jdist.AllGatherFactory echo = (rank, size) -> (src, b) -> new byte[size * b];
        Distributed.reset();
        try {
            assertThatThrownBy(() -> Distributed.init(true, "ring", echo, Map.of())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("only valid with the 'jaccl' backend");
            assertThatThrownBy(() -> Distributed.init(true, "jaccl", null, Map.of())).isInstanceOf(IllegalArgumentException.class);
            // no coordinator needed with a custom side channel: the configuration is complete, so it goes on to the devices
            Path f = dir.resolve("devices.json");
            Files.writeString(f, "[[null,\"jdist_absent_dev\"],[\"jdist_absent_dev\",null]]");
            if (Verbs.problem(Verbs.defaultLibrary()).isEmpty()) {
                assertThatThrownBy(() -> Distributed.init(false, "jaccl", echo, Map.of("MLX_RANK", "1", "MLX_IBV_DEVICES", f.toString())))
                        .isInstanceOf(ConfigException.class).hasMessageContaining("jdist_absent_dev");
            }
            // not configured, not strict: the singleton, cached under "jaccl" only
            dev.jdist.Group g = Distributed.init(false, "jaccl", echo, Map.of());
            assertThat(g.size()).isEqualTo(1);
            assertThat(Distributed.init(true, "jaccl", echo, Map.of())).isSameAs(g);
        } finally {
            Distributed.reset();
        }
    }

    @Test
    @Timeout(120)
    void groupOverTheInMemoryFabricWithArrays() throws Exception {
        int n = 3;
        MemFabric fabric = MemFabric.mesh(n, JacclConfig.QpMode.UC);
        GroupImpl[] groups = new GroupImpl[n];
        for (int r = 0; r < n; r++) {
            groups[r] = JacclGroup.over(r, n, JacclConfig.Topology.MESH, 0, Duration.ofSeconds(30),
                    SideChannel.custom(r, n, (rank, size) -> (src, b) -> new byte[size * b]), fabric.transport(r));
        }
        Thread[] ts = new Thread[n];
        Array[] sums = new Array[n], gathered = new Array[n], scattered = new Array[n];
        Throwable[] errors = new Throwable[n];
        for (int r = 0; r < n; r++) {
            int rank = r;
            ts[r] = new Thread(() -> {
                try {
                    Array x = Array.fromFloats(new float[]{rank, 1, 2, 3}, 4);
                    sums[rank] = Array.zeros(DType.FLOAT32, 4);
                    groups[rank].allReduce(x, sums[rank], ReduceOp.SUM);
                    gathered[rank] = Array.zeros(DType.FLOAT32, 12);
                    groups[rank].allGather(x, gathered[rank]);
                    Array y = Array.fromInts(new int[]{1, 2, 3, 4, 5, 6}, 6);
                    scattered[rank] = Array.zeros(DType.INT32, 2);
                    groups[rank].sumScatter(y, scattered[rank]);
                } catch (Throwable t) {
                    errors[rank] = t;
                }
            });
            ts[r].start();
        }
        for (Thread t : ts) t.join(60_000);
        for (int r = 0; r < n; r++) {
            assertThat(errors[r]).as("rank %d", r).isNull();
            assertThat(sums[r].toFloatArray()).containsExactly(3, 3, 6, 9);
            assertThat(gathered[r].toFloatArray()).containsExactly(0, 1, 2, 3, 1, 1, 2, 3, 2, 1, 2, 3);
            assertThat(scattered[r].toIntArray()).containsExactly(3 * (2 * r + 1), 3 * (2 * r + 2));
        }
        assertThat(groups[0].backendName()).isEqualTo("jaccl");
        assertThatThrownBy(() -> groups[0].split(0, 0)).isInstanceOf(UnsupportedCollectiveException.class);
        for (GroupImpl g : groups) g.close();
    }
}
