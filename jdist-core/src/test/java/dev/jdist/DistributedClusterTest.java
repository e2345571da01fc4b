package dev.jdist;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * How {@link Distributed#init} finds the job (docs/clusters.md): JDIST_BACKEND, the MPI-launcher rule under "any",
 * 1-process jobs, and the rule that a process whose environment describes several processes never gets the 1-rank
 * group.
 */
class DistributedClusterTest {

    @TempDir
    Path dir;

    private final DistributedTest.FakeBackend nccl = new DistributedTest.FakeBackend("nccl", false);
    private final DistributedTest.FakeBackend ring = new DistributedTest.FakeBackend("ring", false);
    private final DistributedTest.FakeBackend mpi = new DistributedTest.FakeBackend("mpi", false);
    private final DistributedTest.FakeBackend jaccl = new DistributedTest.FakeBackend("jaccl", false);

    private void fakes() { Distributed.useBackendsForTesting(List.of(nccl, ring, mpi, jaccl)); }

    @AfterEach
    void restore() { Distributed.useBackendsForTesting(null); }

    @Test
    void aHostfileOfSeveralRanksWithoutMlxRankIsAnErrorNotARankAlone() throws Exception {
        fakes();
        Path two = dir.resolve("two.json");
        Files.writeString(two, "[[\"127.0.0.1:40001\"], [\"127.0.0.1:40002\"]]");
        assertThatThrownBy(() -> Distributed.init(false, "any", Map.of("MLX_HOSTFILE", two.toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("lists 2 ranks but MLX_RANK is not set").hasMessageContaining("jdist launch");
        Path one = dir.resolve("one.json");
        Files.writeString(one, "[[\"127.0.0.1:40001\"]]");
        assertThat(Distributed.init(false, "any", Map.of("MLX_HOSTFILE", one.toString())).size()).isEqualTo(1);
    }

    @Test
    void mlxRankAndAWorldSizeWithNoBackendIsAnError() {
        fakes();
        assertThatThrownBy(() -> Distributed.init(false, "any", Map.of("MLX_RANK", "1", "MLX_WORLD_SIZE", "4", "NCCL_HOST_IP", "h")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MLX_RANK=1 and MLX_WORLD_SIZE=4 describe a 4-process job");
    }

    @Test
    void underAnyAnMpiLaunchersJobStaysAnMpiJob() {
        fakes();
        mpi.configured = true;
        Group g = Distributed.init(false, "any", Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "2"));
        assertThat(g.backend()).isEqualTo("mpi");
        assertThat(ring.initCalls).containsExactly(false);   // tried with its own variables only, no rendezvous
    }

    @Test
    void underAnyAnMpiLaunchersJobWithoutMpiIsAnErrorNamingJdistBackend() {
        fakes();
        assertThatThrownBy(() -> Distributed.init(false, "any", Map.of("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "4")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("this process is rank 1 of 4").hasMessageContaining("JDIST_BACKEND=ring");
    }

    @Test
    void jdistBackendStandsInForAny() {
        fakes();
        mpi.configured = true;
        Group g = Distributed.init(false, "any", Map.of("JDIST_BACKEND", "mpi"));
        assertThat(g.backend()).isEqualTo("mpi");
        assertThat(nccl.initCalls).isEmpty();
        assertThat(Distributed.init(false, "any", Map.of())).isSameAs(g);
        assertThat(Distributed.init(false, "mpi", Map.of())).isSameAs(g);
        Distributed.reset();
        assertThatThrownBy(() -> Distributed.init(false, "any", Map.of("JDIST_BACKEND", "gloo")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("JDIST_BACKEND=\"gloo\" is not a backend");
    }

    @Test
    void aBackendThatCannotJoinFromARendezvousSaysSo() {
        fakes();
        assertThatThrownBy(() -> Distributed.init(false, "ring", Map.of("RANK", "0", "WORLD_SIZE", "1")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("cannot start from a rendezvous");
    }

    @Test
    void aOneProcessTorchrunJobIsAOneRankRing() {
        Group g = Distributed.init(false, "any", Map.of("RANK", "0", "WORLD_SIZE", "1", "JDIST_TIMEOUT", "10"));
        try {
            assertThat(g.backend()).isEqualTo("ring");
            assertThat(g.size()).isEqualTo(1);
            assertThat(g.jobTable()).hasValueSatisfying(t -> {
                assertThat(t.source()).isEqualTo("torchrun");
                assertThat(t.size()).isEqualTo(1);
                assertThat(t.rank(0).jdistVersion()).isNotBlank();
            });
            Array x = Array.ones(DType.FLOAT32, 3);
            assertThat(g.allSum(x)).isSameAs(x);
        } finally {
            Distributed.reset();
        }
    }

    @Test
    void badJobVariablesFailWhateverStrictIs() {
        fakes();
        assertThatThrownBy(() -> Distributed.init(false, "any", Map.of("RANK", "x", "WORLD_SIZE", "2")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("RANK=\"x\"");
        assertThatThrownBy(() -> Distributed.init(false, "any", Map.of("JOB_COMPLETION_INDEX", "1")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("JDIST_WORLD_SIZE");
    }

    @Test
    void badRendezvousSettingsNameTheVariable() {
        Map<String, String> job = Map.of("RANK", "0", "WORLD_SIZE", "1");
        for (Map.Entry<String, String> bad : List.of(Map.entry("JDIST_RENDEZVOUS_TIMEOUT", "soon"),
                Map.entry("JDIST_RING_CONNECTIONS", "9"), Map.entry("JDIST_IFNAME", "no-such-nic0"),
                Map.entry("JDIST_TRANSPORT", "udp"))) {
            Map<String, String> env = new java.util.HashMap<>(job);
            env.put(bad.getKey(), bad.getValue());
            try {
                assertThatThrownBy(() -> Distributed.init(false, "ring", env)).as(bad.getKey())
                        .isInstanceOf(ConfigException.class).hasMessageContaining(bad.getKey());
            } finally {
                Distributed.reset();
            }
        }
    }
}
