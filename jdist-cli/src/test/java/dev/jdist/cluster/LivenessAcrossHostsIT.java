package dev.jdist.cluster;

import dev.jdist.testing.LongTest;
import dev.jdist.launch.ShellQuote;
import dev.jdist.ring.LivenessProgram;
import dev.jdist.testing.ClusterCheck;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.DelayRelay;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.NetnsCluster;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The liveness watch across hosts: three network namespaces ({@link NetnsCluster}), one ring rank in each, met through
 * the rendezvous (jdist's own variables), JDIST_HEARTBEAT=3s and JDIST_TIMEOUT unset (30 minutes with the watch). Faults
 * come from iptables inside a namespace: every packet of one host dropped (a partition) ends the job on every rank
 * within the bound, each naming a rank across the cut; 5 % of every host's incoming packets dropped (a lossy network),
 * or 50 ms of extra delay each way on the connections one host opens (bench/lib/delay-relay: this kernel has no
 * sch_netem), leaves a healthy job running to its end without a false failure.
 */
@Timeout(420)
class LivenessAcrossHostsIT {
    private static final Duration T = Duration.ofSeconds(180);
    private static NetnsCluster cluster;

    @BeforeAll
    static void startCluster() {
        Requirements.netnsCluster();
        Requirements.require(Requirements.command("iptables", "iptables"));
        cluster = NetnsCluster.start(3);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    @AfterEach
    void flushRules() {
        for (int h = 0; h < cluster.size(); h++) cluster.exec(h, Duration.ofSeconds(20), "iptables", "-F");
    }

    /** Rank r of 3 on host r, running {@link LivenessProgram} with {@code args}; its output goes to {@code log(r)}. */
    private static CompletableFuture<CommandResult> rank(int r, int port, Path dir, String... args) {
        JdistCli.argv(List.of());   // a clear message when the jar was not built
        List<String> java = new ArrayList<>(List.of(JdistCli.java(), "--add-modules=jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m",
                "-cp", JdistCli.JAR + ":" + ClusterCheck.classPath(), LivenessProgram.class.getName()));
        java.addAll(List.of(args));
        String line = "exec env -i PATH=/usr/bin:/bin HOME=/tmp JDIST_RANK=" + r + " JDIST_WORLD_SIZE=3 JDIST_MASTER_ADDR="
                + cluster.address(0) + " JDIST_MASTER_PORT=" + port + " JDIST_HEARTBEAT=3s JDIST_JOB_TOKEN=liveness-across-hosts "
                + ShellQuote.join(java) + " > " + dir.resolve("rank" + r + ".log") + " 2>&1";
        return CompletableFuture.supplyAsync(() -> cluster.exec(r, T, "sh", "-c", line), task -> Thread.ofVirtual().start(task));
    }

    private static String log(Path dir, int r) {
        try {
            return Files.exists(dir.resolve("rank" + r + ".log")) ? Files.readString(dir.resolve("rank" + r + ".log")) : "";
        } catch (IOException e) {
            return "<" + e + ">";
        }
    }

    private static void awaitLooping(Path dir, List<CompletableFuture<CommandResult>> ranks) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(150).toNanos();
        for (int r = 0; r < ranks.size(); r++) {
            while (!log(dir, r).contains("looping")) {
                assertThat(System.nanoTime() < end && !ranks.get(r).isDone()).as("rank %d never started looping:%n%s", r, log(dir, r))
                        .isTrue();
                Thread.sleep(200);
            }
        }
    }

    /** A 3-rank job of all_sums for {@code seconds} (each rank bounded by {@code T}): every rank finishes, no false failure. */
    private static void assertLoopingJobFinishes(Path dir, int seconds) throws IOException {
        int port = FreePorts.block(1);
        List<CompletableFuture<CommandResult>> ranks = new ArrayList<>();
        for (int r = 0; r < 3; r++) ranks.add(rank(r, port, dir, "loop", "100000000", Integer.toString(seconds)));
        for (int r = 0; r < 3; r++) {
            CommandResult c = ranks.get(r).join();
            assertThat(c.exitCode()).as("rank %d:%n%s", r, log(dir, r)).isZero();
            assertThat(log(dir, r)).contains("rank " + r + " finished");
        }
    }

    private static Path newDir(String name) throws IOException {
        return Files.createDirectories(cluster.directory().resolve(name + "-" + System.nanoTime()));
    }

    @Test
    void aHostCutOffByTheNetworkEndsTheJobOnEveryRankNamingARankAcrossTheCut() throws Exception {
        Path dir = newDir("partition");
        int port = FreePorts.block(1);
        List<CompletableFuture<CommandResult>> ranks = new ArrayList<>();
        for (int r = 0; r < 3; r++) ranks.add(rank(r, port, dir, "loop", "100000000", "240"));
        awaitLooping(dir, ranks);
        CommandResult in = cluster.exec(2, Duration.ofSeconds(20), "iptables", "-A", "INPUT", "-j", "DROP");
        CommandResult out = cluster.exec(2, Duration.ofSeconds(20), "iptables", "-A", "OUTPUT", "-j", "DROP");
        assertThat(in.exitCode()).as(in.stderr()).isZero();
        assertThat(out.exitCode()).as(out.stderr()).isZero();
        for (int r = 0; r < 3; r++) {
            CommandResult c = ranks.get(r).join();
            String text = log(dir, r);
            assertThat(c.exitCode()).as("rank %d (8 = PeerUnresponsive):%n%s", r, text).isEqualTo(8);
            assertThat(text).contains("FAILED PeerUnresponsiveException").contains("no heartbeat for");
            if (r < 2) assertThat(text).as("rank %d names host 2's rank", r).contains("peer=2 ").contains(cluster.address(2));
            else assertThat(text).as("rank 2 names a rank it is cut off from").containsPattern("peer=[01] ");
        }
        assertThat(cluster.processesInAll().values()).as("no process left").allMatch(List::isEmpty);
    }

    @LongTest   // chaos: no false failure under delay
    @Test
    void fiftyMillisecondsOfExtraDelayOnOneHostsLinksCausesNoFalseFailure() throws Exception {
        Requirements.require(Requirements.command("gcc", "gcc"));
        Path dir = newDir("delay");
        // host 1's own outgoing TCP connections (not ssh, not to itself) go through the relay, 50 ms each way
        for (String[] rule : List.of(new String[] {"-d", cluster.address(1), "-j", "RETURN"},
                new String[] {"-p", "tcp", "-d", cluster.subnet(0), "!", "--dport", "22", "-m", "mark", "!", "--mark",
                        Integer.toString(DelayRelay.MARK), "-j", "REDIRECT", "--to-ports", Integer.toString(DelayRelay.PORT)})) {
            List<String> cmd = new ArrayList<>(List.of("iptables", "-t", "nat", "-A", "OUTPUT"));
            cmd.addAll(List.of(rule));
            CommandResult c = cluster.exec(1, Duration.ofSeconds(20), cmd.toArray(String[]::new));
            assertThat(c.exitCode()).as(c.stderr()).isZero();
        }
        try (DelayRelay relay = DelayRelay.start(cluster, 1, dir, 50, Duration.ofSeconds(150))) {
            // 20 s of all_sums with the heartbeat's bound at 3 s: every operation waits on the delayed links
            assertLoopingJobFinishes(dir, 20);
            // the job's connections from host 1 really went through the relay
            String totals = relay.stats();
            assertThat(totals).as("relay totals").matches("connections=[1-9][0-9]* bytes=[1-9][0-9]*\\s*");
            System.out.println("[LivenessAcrossHostsIT] 50 ms relay on host 1: " + totals);
        } finally {
            cluster.exec(1, Duration.ofSeconds(20), "iptables", "-t", "nat", "-F");
        }
    }

    @LongTest   // chaos: no false failure under loss
    @Test
    void fivePercentPacketLossOnEveryHostCausesNoFalseFailure() throws Exception {
        for (int h = 0; h < 3; h++) {
            CommandResult c = cluster.exec(h, Duration.ofSeconds(20), "iptables", "-A", "INPUT", "-m", "statistic", "--mode", "random",
                    "--probability", "0.05", "-j", "DROP");
            assertThat(c.exitCode()).as(c.stderr()).isZero();
        }
        // 25 s of all_sums (a bounded loop), the heartbeat's bound 3 s: some 250 heartbeats per rank cross the lossy links
        assertLoopingJobFinishes(newDir("loss"), 25);
    }
}
