package dev.jdist.launch;

import dev.jdist.flight.FlightDump;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.NetnsCluster;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flight records across hosts: network namespaces with their own sshd (NetnsCluster). The launcher reads a remote
 * host's records back over real ssh, and a 3-host job whose rank falls behind ends with the analysis of every
 * host's records.
 */
@Timeout(300)
class JobFlightRecordsIT {

    private static NetnsCluster cluster;

    @TempDir
    Path dir;

    @BeforeAll
    static void startCluster() {
        Requirements.netnsCluster();
        cluster = NetnsCluster.start(3);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static String ssh() {
        return cluster.sshBinDir().resolve("ssh").toString();
    }

    @Test
    void aRemoteHostsRecordsAreReadBackOverSsh() throws Exception {
        Path remote = Files.createDirectories(dir.resolve("remote job"));
        FlightDump record = new FlightDump(FlightDump.FORMAT, FlightDump.VERSION, "signal SIGTERM", "2026-12-03T10:00:00Z", "node1", 77,
                "0.1.0", 1024, null, List.of(new FlightDump.GroupRecord("world", "ring", 1, 3, 1, List.of(
                new FlightDump.Operation(0, "all_sum", "float32", List.of(8), null, 32, -1, false, FlightDump.STARTED, null,
                        "2026-12-03T09:59:59Z", null, null)))));
        Files.writeString(remote.resolve("jdist-flight-rank-1-77.json"), record.toJson());
        Path local = dir.resolve("local");

        long t0 = System.nanoTime();
        JobFlightRecords.in(local).fetchFrom(cluster.hostName(1), ssh(), remote.toString());
        JobFlightRecords.in(local).fetchFrom("no-such-host.invalid", ssh(), remote.toString());   // fails, bounded
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(2 * JobFlightRecords.FETCH_MILLIS + 5_000));

        assertThat(FlightDump.files(local)).extracting(p -> p.getFileName().toString()).containsExactly("jdist-flight-rank-1-77.json");
        assertThat(FlightDump.read(local.resolve("jdist-flight-rank-1-77.json"))).isEqualTo(record);
    }

    @Test
    void aFailedJobAcrossHostsEndsWithTheAnalysisOfEveryHostsRecords() throws Exception {
        StringBuilder hf = new StringBuilder("[");
        for (int i = 0; i < 3; i++) {
            hf.append(i == 0 ? "" : ", ").append("{\"ssh\": \"").append(cluster.hostName(i)).append("\", \"ips\": [\"")
                    .append(cluster.address(i)).append("\"]}");
        }
        Path hostfile = Files.writeString(dir.resolve("hosts.json"), hf.append("]").toString());
        Map<String, String> env = new HashMap<>();
        env.put("PATH", cluster.launcherPath());
        env.put("JDIST_LAUNCH_BACKEND", "ring");
        env.put("JDIST_DUMP_DIR", dir.resolve("records").toString());
        CommandResult r = JdistCli.launch(Duration.ofSeconds(240), env, null, null, "--hostfile", hostfile.toString(),
                "-p", Integer.toString(FreePorts.block(3)), "--env", "JDIST_TIMEOUT=10",
                "--class-path", Path.of("target/test-classes").toAbsolutePath().toString(), FlightScenario.class.getName(), "behind");

        assertThat(r.exitCode()).as(r.toString()).isNotZero();
        assertThat(r.stderr()).as(r.toString()).contains("flight records of the job (3 in ")
                .contains("  group world (ring, 3 ranks): records from all 3 ranks")
                .contains("  behind: rank 1 at #4 (finished it ");
        try (Stream<Path> jobs = Files.list(dir.resolve("records"))) {
            Path job = jobs.findFirst().orElseThrow();
            assertThat(FlightDump.files(job)).hasSize(3);
        }
    }
}
