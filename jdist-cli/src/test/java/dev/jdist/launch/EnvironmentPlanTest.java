package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.HostList;
import dev.jdist.hosts.Hostfile;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/reference/launcher.md §4–§5 worked examples. */
class EnvironmentPlanTest {

    private static final List<HostEntry> THREE_BY_TWO = Hostfile.parse("h", """
            [{"ssh": "node-a", "ips": ["10.0.0.1", "10.0.1.1"]},
             {"ssh": "node-b", "ips": ["10.0.0.2", "10.0.1.2"]},
             {"ssh": "node-c", "ips": ["10.0.0.3", "10.0.1.3"]}]""").hosts();

    private static EnvironmentPlan.Inputs inputs(String backend, List<HostEntry> hosts) {
        return new EnvironmentPlan.Inputs(backend, hosts, List.of(), List.of(), 0, 0, false, 1, 1, 32323, 12345, null);
    }

    private static Map<String, String> env(RankPlan p) {
        return EnvironmentPlan.describe(p);
    }

    @Test
    void ringPortsOneConnectionPerIp() {
        var plan = EnvironmentPlan.plan(inputs("ring", THREE_BY_TWO));
        String expected = "[[\"10.0.0.1:32323\", \"10.0.1.1:32324\"], [\"10.0.0.2:32325\", \"10.0.1.2:32326\"], "
                + "[\"10.0.0.3:32327\", \"10.0.1.3:32328\"]]";
        for (RankPlan r : plan.ranks()) {
            assertThat(r.files()).containsExactly(new RankPlan.FileVar("MLX_HOSTFILE", expected));
            assertThat(env(r)).containsEntry("MLX_RANK", Integer.toString(r.rank())).doesNotContainKey("MLX_RING_VERBOSE");
        }
    }

    @Test
    void ringPortsTwoConnectionsPerIp() {
        var in = new EnvironmentPlan.Inputs("ring", THREE_BY_TWO, List.of(), List.of(), 0, 0, false, 1, 2, 32323, 12345, null);
        assertThat(EnvironmentPlan.ringAddresses(THREE_BY_TWO, 32323, 2)).containsExactly(
                List.of("10.0.0.1:32323", "10.0.0.1:32324", "10.0.1.1:32325", "10.0.1.1:32326"),
                List.of("10.0.0.2:32327", "10.0.0.2:32328", "10.0.1.2:32329", "10.0.1.2:32330"),
                List.of("10.0.0.3:32331", "10.0.0.3:32332", "10.0.1.3:32333", "10.0.1.3:32334"));
        assertThat(EnvironmentPlan.plan(in).ranks()).hasSize(3);
    }

    @Test
    void ringLocalAndRepeatedHosts() {
        var local = EnvironmentPlan.plan(inputs("ring", HostList.parse("127.0.0.1", 4)));
        assertThat(local.ranks().get(2).files().get(0).content())
                .isEqualTo("[[\"127.0.0.1:32323\"], [\"127.0.0.1:32324\"], [\"127.0.0.1:32325\"], [\"127.0.0.1:32326\"]]");
        assertThat(EnvironmentPlan.ringAddresses(HostList.parse("10.0.0.1,10.0.0.2", 2), 5000, 1)).containsExactly(
                List.of("10.0.0.1:5000"), List.of("10.0.0.1:5001"), List.of("10.0.0.2:5002"), List.of("10.0.0.2:5003"));
    }

    @Test
    void ringSingleRankHasNoHostfile() {
        var plan = EnvironmentPlan.plan(inputs("ring", HostList.parse("127.0.0.1", 1)));
        RankPlan r = plan.ranks().get(0);
        assertThat(r.files()).isEmpty();
        assertThat(r.dropInheritedHostfile()).isTrue();
        assertThat(env(r)).containsEntry("MLX_RANK", "0").doesNotContainKey("MLX_HOSTFILE");
        var explicit = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 1), List.of(),
                List.of("MLX_HOSTFILE=/x.json"), 0, 0, false, 1, 1, 32323, 12345, null));
        assertThat(explicit.ranks().get(0).dropInheritedHostfile()).isFalse();
        assertThat(env(explicit.ranks().get(0))).containsEntry("MLX_HOSTFILE", "/x.json");
    }

    @Test
    void ringNeedsIps() {
        assertThatThrownBy(() -> EnvironmentPlan.plan(inputs("ring", HostList.parse("node1,node2", 1))))
                .isInstanceOf(CliFailure.class)
                .hasMessageContaining("The ring backend requires IPs to be provided instead of hostnames")
                .hasMessageContaining("node1");
        assertThatThrownBy(() -> EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 2),
                List.of(), List.of(), 0, 0, false, 1, 0, 32323, 12345, null))).hasMessageContaining("--connections-per-ip");
    }

    @Test
    void ringVerboseAndToken() {
        var plan = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 2), List.of(), List.of(),
                0, 0, true, 1, 1, 32323, 12345, "abc"));
        assertThat(env(plan.ranks().get(1))).containsEntry("MLX_RING_VERBOSE", "1").containsEntry("JDIST_JOB_TOKEN", "abc");
    }

    @Test
    void everyBackendsRanksGetTheJobsFlightRecordDirectoryAfterTheUsersEntries() {
        for (String backend : List.of("ring", "nccl")) {
            var plan = EnvironmentPlan.plan(new EnvironmentPlan.Inputs(backend, HostList.parse("127.0.0.1", 2), List.of(),
                    List.of("JDIST_DUMP_DIR=/mine"), 0, 0, false, 2, 1, 32323, 12345, "abc", "/tmp/jdist-job-1"));
            for (RankPlan r : plan.ranks()) {
                assertThat(env(r)).containsEntry("JDIST_DUMP_DIR", "/tmp/jdist-job-1");
                List<String> names = r.env().stream().map(EnvEntry::name).toList();
                assertThat(names.lastIndexOf("JDIST_DUMP_DIR")).isEqualTo(names.indexOf("JDIST_JOB_TOKEN") + 1);
            }
        }
        var none = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 2), List.of(), List.of(),
                0, 0, false, 1, 1, 32323, 12345, null));
        assertThat(env(none.ranks().get(0))).doesNotContainKey("JDIST_DUMP_DIR");
    }

    @Test
    void nccl() {
        var plan = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("nccl", HostList.parse("10.0.0.1,10.0.0.2", 4), List.of(),
                List.of("NCCL_DEBUG=WARN", "MLX_RANK=9", "CUDA_VISIBLE_DEVICES=7"), 0, 0, false, 4, 1, 32323, 12345, null));
        assertThat(plan.ranks()).hasSize(8);
        for (RankPlan r : plan.ranks()) {
            assertThat(env(r)).containsEntry("NCCL_HOST_IP", "10.0.0.1").containsEntry("NCCL_PORT", "12345")
                    .containsEntry("MLX_WORLD_SIZE", "8").containsEntry("CUDA_VISIBLE_DEVICES", Integer.toString(r.rank() % 4))
                    .containsEntry("NCCL_DEBUG", "WARN").containsEntry("MLX_RANK", Integer.toString(r.rank()));
            assertThat(r.files()).isEmpty();
        }
        var verbose = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("nccl", HostList.parse("127.0.0.1", 3), List.of(),
                List.of("NCCL_DEBUG=WARN"), 0, 0, true, 3, 1, 32323, 999, null));
        assertThat(env(verbose.ranks().get(2))).containsEntry("NCCL_DEBUG", "INFO").containsEntry("CUDA_VISIBLE_DEVICES", "2")
                .containsEntry("NCCL_HOST_IP", "127.0.0.1").containsEntry("NCCL_PORT", "999");
        assertThatThrownBy(() -> EnvironmentPlan.plan(inputs("nccl", HostList.parse("linux-1,linux-2", 1))))
                .hasMessageContaining("Rank 0 should have an IP reachable from all other ranks");
    }

    @Test
    void ncclDevicesUseRepeatEvenWithAHostfile() {
        List<HostEntry> hosts = Hostfile.parse("h", "[{\"ssh\":\"a\",\"ips\":[\"10.0.0.1\"]},{\"ssh\":\"a\"},{\"ssh\":\"a\"}]").hosts();
        var plan = EnvironmentPlan.plan(inputs("nccl", hosts));
        assertThat(plan.ranks()).extracting(r -> env(r).get("CUDA_VISIBLE_DEVICES")).containsExactly("0", "0", "0");
    }

    @Test
    void jaccl() {
        List<HostEntry> hosts = Hostfile.parse("h", """
                [{"ssh": "m1", "ips": ["10.1.1.1"], "rdma": [null, "rdma_en3"]},
                 {"ssh": "m2", "rdma": ["rdma_en2", null]}]""").hosts();
        var plan = EnvironmentPlan.plan(inputs("jaccl", hosts));
        for (RankPlan r : plan.ranks()) {
            assertThat(env(r)).containsEntry("MLX_JACCL_COORDINATOR", "10.1.1.1:32323").doesNotContainKey("MLX_JACCL_RING")
                    .doesNotContainKey("MLX_WORLD_SIZE");
            assertThat(r.files()).containsExactly(new RankPlan.FileVar("MLX_IBV_DEVICES", "[[null, \"rdma_en3\"], [\"rdma_en2\", null]]"));
        }
        var ring = EnvironmentPlan.plan(inputs("jaccl-ring", hosts));
        assertThat(env(ring.ranks().get(0))).containsEntry("MLX_JACCL_RING", "1");
        List<String> names = ring.ranks().get(0).env().stream().map(EnvEntry::name).toList();
        assertThat(names).containsSubsequence("MLX_JACCL_COORDINATOR", "MLX_JACCL_RING");
    }

    @Test
    void jacclMatrixChecks() {
        assertThatThrownBy(() -> EnvironmentPlan.plan(inputs("jaccl", Hostfile.parse("h",
                "[{\"ssh\":\"m1\",\"ips\":[\"1.1.1.1\"],\"rdma\":[null,\"x\"]},{\"ssh\":\"m2\",\"rdma\":[\"y\",null,null]}]").hosts())))
                .hasMessageContaining("Malformed hostfile for jaccl backend").hasMessageContaining("host 1 (m2) has 3 rdma entries, expected 2");
        assertThatThrownBy(() -> EnvironmentPlan.plan(inputs("jaccl", Hostfile.parse("h",
                "[{\"ssh\":\"m1\",\"ips\":[\"1.1.1.1\"],\"rdma\":[\"z\",\"x\"]},{\"ssh\":\"m2\",\"rdma\":[\"y\",null]}]").hosts())))
                .hasMessageContaining("Malformed hostfile for jaccl backend").hasMessageContaining("rdma[0]");
        assertThatThrownBy(() -> EnvironmentPlan.plan(inputs("jaccl-ring", HostList.parse("10.0.0.1,10.0.0.2", 1))))
                .hasMessageContaining("Malformed hostfile for jaccl backend");
        assertThatThrownBy(() -> EnvironmentPlan.plan(inputs("jaccl", HostList.parse("m1,m2", 1))))
                .hasMessageContaining("Rank 0 should have an IP");
        // all-null off-diagonal is accepted
        EnvironmentPlan.plan(inputs("jaccl", Hostfile.parse("h",
                "[{\"ssh\":\"m1\",\"ips\":[\"1.1.1.1\"],\"rdma\":[null,null]},{\"ssh\":\"m2\",\"rdma\":[null,null]}]").hosts()));
    }

    @Test
    void environmentOrderAndOverrides() {
        var plan = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 2),
                List.of("A=file", "B=file"), List.of("A=cli", "K=v=w", "FOO", "LINES=5", "1X=2", "=x", "É=1", "MLX_RANK=7"),
                120, 40, false, 1, 1, 32323, 12345, null));
        RankPlan r = plan.ranks().get(1);
        assertThat(r.env()).extracting(EnvEntry::toString)
                .containsExactly("A=file", "B=file", "A=cli", "K=v=w", "FOO=", "LINES=5", "MLX_RANK=7", "COLUMNS=120", "LINES=40");
        assertThat(env(r)).containsEntry("A", "cli").containsEntry("LINES", "40").containsEntry("MLX_RANK", "1");
        assertThat(plan.warnings()).containsExactly(
                "'1X=2' is an invalid environment variable so it is ignored",
                "'=x' is an invalid environment variable so it is ignored",
                "'É=1' is an invalid environment variable so it is ignored");
    }

    @Test
    void columnsGivenSuppressesTerminalSize() {
        var plan = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 2),
                List.of(), List.of("COLUMNS=80"), 120, 40, false, 1, 1, 32323, 12345, null));
        assertThat(env(plan.ranks().get(0))).containsEntry("COLUMNS", "80").doesNotContainKey("LINES");
        var unknownHeight = EnvironmentPlan.plan(new EnvironmentPlan.Inputs("ring", HostList.parse("127.0.0.1", 2),
                List.of(), List.of(), 100, 0, false, 1, 1, 32323, 12345, null));
        assertThat(env(unknownHeight.ranks().get(0))).containsEntry("COLUMNS", "100").containsEntry("LINES", "0");
    }

    @Test
    void backendNames() {
        for (String ok : Arrays.asList("ring", "mpi", "nccl", "jaccl", "jaccl-ring")) {
            EnvironmentPlan.checkBackend(ok);
        }
        assertThatThrownBy(() -> EnvironmentPlan.checkBackend("Ring"))
                .hasMessageContaining("The backend should be one of {'ring', 'mpi', 'nccl', 'jaccl', 'jaccl-ring'}");
    }

    @Test
    void mlxJsonLayout() {
        assertThat(MlxJson.write(Arrays.asList(Arrays.asList(null, "a\"b\\"), List.of("é\u0001", List.of())))).isEqualTo(
                "[[null, \"a\\\"b\\\\\"], [\"\\u00e9\\u0001\", []]]");
    }
}
