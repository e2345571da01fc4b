package dev.jdist.cluster;

import dev.jdist.testing.LongTest;
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

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A job of jdist ranks on a ring of point-to-point links (MLX's Thunderbolt ring; docs/reference/collectives.md §10.1):
 * four network namespaces joined in a ring of cables ({@link NetnsCluster#addRingOfCables()}), each host's ring address
 * its end of the cable to its left neighbour, as {@code jdist config} writes it, and ssh over a separate network. A
 * rank reaches only its two neighbours over the cables, so the ranks' reachability probes find the gaps, the group
 * keeps to the ring, says so once, and runs correctly; operations that need direct connections fail with the reason.
 * Before the probes, such a job failed in {@code Distributed.init()} after {@code JDIST_TIMEOUT} (the liveness watch's
 * first all_gather took recursive doubling, which connects rank 0 to rank 2).
 */
@LongTest   // must run alone: beside other integration tests on 2 cores its 4-rank job over ssh lost its heartbeats for 8 s (cause not found); the long tier runs one test JVM at a time
@Timeout(300)
class RingOfCablesIT {
    private static final Duration T = Duration.ofSeconds(200);
    private static NetnsCluster cluster;
    private static Map<String, String> env;

    @BeforeAll
    static void startCluster() {
        Requirements.netnsCluster();
        cluster = NetnsCluster.start(4);
        cluster.addRingOfCables();
        env = new HashMap<>();
        env.put("PATH", cluster.launcherPath());   // our ssh wrapper first: ssh -F <cluster config>
        env.put("JDIST_LAUNCH_BACKEND", "ring");
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    /** The hostfile jdist config writes for a ring of cables: each host's ips, its end of the cable to its left. */
    private static Path cablesHostfile(Path dir) throws IOException {
        return hostfile(dir.resolve("cables.json"), cluster::cableAddressFacingLeft);
    }

    /** The hostfile over the ssh network (one bridge): every host reaches every other. */
    private static Path bridgeHostfile(Path dir) throws IOException {
        return hostfile(dir.resolve("bridge.json"), cluster::address);
    }

    private static Path hostfile(Path file, IntFunction<String> ip) throws IOException {
        StringBuilder hf = new StringBuilder("[");
        for (int i = 0; i < cluster.size(); i++) {
            hf.append(i == 0 ? "" : ", ").append("{\"ssh\": \"").append(cluster.hostName(i)).append("\", \"ips\": [\"")
                    .append(ip.apply(i)).append("\"]}");
        }
        return Files.writeString(file, hf.append("]").toString());
    }

    @Test
    void aJobOnARingOfCablesKeepsToTheRingAndChecksOut(@TempDir Path dir) throws Exception {
        CommandResult r = JdistCli.launch(T, env, null, null, "--hostfile", cablesHostfile(dir).toString(),
                "-p", Integer.toString(FreePorts.block(4)),
                "--class-path", Path.of("target/test-classes").toAbsolutePath().toString(), CablesProgram.class.getName());
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String> lines = JdistCli.lines(r.stdout()).stream().filter(l -> l.matches("\\d+ (ok|WRONG).*")).toList();
        assertThat(lines).as(r.toString()).hasSize(4).allSatisfy(l -> assertThat(l).contains(" ok 10 | send: rank ")
                .containsPattern(" cannot send to rank \\d: the ring sends only to a neighbour: ranks \\d \\(left\\) and \\d \\(right\\) "
                        + "of 4, because it needs direct connections between the ranks, and in this group 3 pairs of ranks cannot "
                        + "connect directly \\(rank 0 -> rank 2 at ")
                .contains("| broadcast: rank ").contains(": broadcast is not supported here: it needs direct connections"));
        // nothing was recorded as a failure: the refusals came before the operations began
        String output = r.stdout() + r.stderr();   // the remote ranks' stderr arrives with their stdout
        assertThat(output).doesNotContain("flight record (failure)");
        assertThat(lines).extracting(l -> l.split(" ")[0]).containsExactlyInAnyOrder("0", "1", "2", "3");
        // rank 0 says once why the group runs the ring: the pairs two steps apart, with the address and the cause
        assertThat(output).as(r.toString())
                .containsOnlyOnce("jdist: rank 0: 3 pairs of ranks cannot connect directly (rank 0 -> rank 2 at "
                        + cluster.cableAddressFacingLeft(2) + ":")
                .contains("rank 1 -> rank 3 at " + cluster.cableAddressFacingLeft(3) + ":")
                .contains("So this group runs the ring, over each rank's connections to its two neighbours, at every size");
    }

    @Test
    void benchOnARingOfCablesRunsTheRingWithEveryValueChecked(@TempDir Path dir) throws Exception {
        CommandResult r = JdistCli.run(T, env, "bench", "--hostfile", cablesHostfile(dir).toString(), "-n", "1",
                "-p", Integer.toString(FreePorts.block(4)), "--op", "all_sum,all_gather,sum_scatter", "--sizes", "4B:4MiB",
                "-f", "64", "-i", "3", "-w", "1", "--jit-warmup", "0", "--csv");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String[]> rows = JdistCli.lines(r.stdout()).stream().filter(l -> l.matches("(all_sum|all_gather|sum_scatter),.*"))
                .map(l -> l.split(",")).toList();
        assertThat(rows).as(r.stdout()).hasSize(15).allSatisfy(c -> {
            assertThat(c[2]).as("ranks").isEqualTo("4");
            assertThat(c[11]).as("wrong values").isEqualTo("0");
            assertThat(c[13]).as("algorithm").isEqualTo("ring");
        });
    }

    @Test
    void overTheSshNetworkEveryPairConnectsAndTheSizeAwareAlgorithmsRun(@TempDir Path dir) throws Exception {
        Path hostfile = bridgeHostfile(dir);
        CommandResult r = JdistCli.run(T, env, "bench", "--hostfile", hostfile.toString(), "-n", "1",
                "-p", Integer.toString(FreePorts.block(4)), "--op", "all_sum", "--sizes", "4B:4B", "-i", "3", "-w", "1",
                "--jit-warmup", "0", "--csv");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stderr()).doesNotContain("cannot connect directly");
        assertThat(JdistCli.lines(r.stdout())).as(r.stdout()).anySatisfy(l -> assertThat(l).startsWith("all_sum,").contains(",0,")
                .contains(",rd,"));
    }

    /**
     * A firewall that silently drops one pair's connections (host 2 drops every new TCP connection from host 0 but ssh):
     * the probe of that pair times out after at most 5 s, and the job runs the ring, naming the pair, instead of failing
     * after JDIST_TIMEOUT.
     */
    @Test
    void aPairAFirewallSilentlyDropsIsFoundAndTheJobRunsTheRing(@TempDir Path dir) throws Exception {
        Requirements.require(Requirements.command("iptables", "iptables"));
        CommandResult rule = cluster.exec(2, Duration.ofSeconds(20), "iptables", "-A", "INPUT", "-s", cluster.address(0), "-p", "tcp",
                "--syn", "!", "--dport", "22", "-j", "DROP");
        assertThat(rule.exitCode()).as(rule.toString()).isZero();
        try {
            CommandResult r = JdistCli.launch(T, env, null, null, "--hostfile", bridgeHostfile(dir).toString(),
                    "-p", Integer.toString(FreePorts.block(4)), JdistCli.repoRoot().resolve("examples/AllSum.java").toString());
            assertThat(r.exitCode()).as(r.toString()).isZero();
            String output = r.stdout() + r.stderr();
            assertThat(JdistCli.lines(r.stdout()).stream().filter(l -> l.contains("array(")).toList()).as(output).hasSize(4)
                    .allSatisfy(l -> assertThat(l).endsWith(" array([4, 4, 4, ..., 4, 4, 4], dtype=float32)"));
            assertThat(output).containsOnlyOnce("jdist: rank 0: 1 pair of ranks cannot connect directly (rank 0 -> rank 2 at "
                    + cluster.address(2) + ":").contains(": no answer (timed out)). So this group runs the ring");
        } finally {
            cluster.exec(2, Duration.ofSeconds(20), "iptables", "-F");
        }
    }
}
