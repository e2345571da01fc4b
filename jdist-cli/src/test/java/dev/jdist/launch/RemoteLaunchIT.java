package dev.jdist.launch;

import dev.jdist.testing.CommandResult;
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
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real jobs across three "hosts": network namespaces with their own sshd (NetnsCluster), reached through the
 * system ssh exactly as on a real cluster (the filesystem is shared, so java and the jar have the same paths).
 */
@Timeout(240)
class RemoteLaunchIT {

    private static final Duration T = Duration.ofSeconds(150);
    private static NetnsCluster cluster;
    private static Map<String, String> env;

    @BeforeAll
    static void startCluster() {
        Requirements.netnsCluster();
        cluster = NetnsCluster.start(3);
        env = new HashMap<>();
        env.put("PATH", cluster.launcherPath()); // our ssh wrapper first: ssh -F <cluster config>
        env.put("JDIST_LAUNCH_BACKEND", "ring");
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static String allHosts() {
        return String.join(",", cluster.addresses());
    }

    private static void assertNoJobProcessLeft() throws InterruptedException {
        boolean clean = JdistCli.await(Duration.ofSeconds(20), () -> cluster.processesInAll().values().stream().allMatch(List::isEmpty));
        StringBuilder left = new StringBuilder();
        for (int i = 0; i < cluster.size(); i++) {
            left.append(cluster.hostName(i)).append(": ").append(cluster.describeProcessesIn(i)).append("; ");
        }
        assertThat(clean).as("processes left in the namespaces: %s", left).isTrue();
    }

    @Test
    void everyLineOfEveryRemoteRankArrives() throws Exception {
        CommandResult r = JdistCli.launch(T, env, null, null, "--hosts", allHosts(), "--",
                "sh", "-c", "i=0; while [ $i -lt 200 ]; do echo \"$JDIST_TEST_HOST r$MLX_RANK l$i\"; i=$((i+1)); done; echo err$MLX_RANK >&2");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String> lines = JdistCli.lines(r.stdout());
        for (int rank = 0; rank < 3; rank++) {
            String prefix = "node" + rank + " r" + rank + " ";
            List<String> mine = lines.stream().filter(l -> l.startsWith(prefix)).toList();
            assertThat(mine).hasSize(200);
            assertThat(mine.get(199)).isEqualTo(prefix + "l199");
        }
        // remote stderr arrives on stdout (pseudo-terminal), as with MLX
        assertThat(lines).contains("err0", "err1", "err2");
        assertThat(r.stdout()).doesNotContain(Bootstrap.HANDSHAKE.trim());
        assertNoJobProcessLeft();
    }

    @Test
    void mixedLocalAndRemoteRanksWithStdin() throws Exception {
        CommandResult r = JdistCli.launch(T, env, "hello\n", null, "--hosts", "127.0.0.1," + cluster.address(1) + "," + cluster.address(2),
                "--", "sh", "-c", "read line; echo \"$MLX_RANK got $line\"");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(JdistCli.lines(r.stdout())).containsExactlyInAnyOrder("0 got hello", "1 got hello", "2 got hello");
        assertNoJobProcessLeft();
    }

    @Test
    void aFailingRemoteRankEndsEveryRankOnEveryHost() throws Exception {
        CommandResult r = JdistCli.launch(T, env, null, null, "--hosts", allHosts(), "-n", "2", "--",
                "sh", "-c", "if [ $MLX_RANK = 3 ]; then sleep 1; exit 3; fi; sleep 600 & wait");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
        assertThat(r.stderr()).contains("[WARN] Node with rank 3 exited with code 3")
                .contains("[WARN] Node with rank 0 was killed").contains("[WARN] Node with rank 5 was killed")
                .contains("job failed: rank 3 on " + cluster.address(1) + " exited with code 3");
        assertNoJobProcessLeft();
    }

    @Test
    void maxRestartsStartsTheJobAgainOverSshWithoutTheHostThatFailed() throws Exception {
        // rank 3 (host 1) fails on the first start only; with --max-failures-per-host 1 host 1 gets no ranks after it
        CommandResult r = JdistCli.launch(T, env, null, null, "--hosts", allHosts(), "-n", "2", "--max-restarts", "2",
                "--max-failures-per-host", "1", "--", "sh", "-c",
                "echo \"rank $MLX_RANK start $JDIST_RESTART\"; if [ $MLX_RANK = 3 ] && [ $JDIST_RESTART = 0 ]; then exit 3; fi; "
                        + "if [ $JDIST_RESTART = 0 ]; then sleep 600 & wait; fi");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        for (int rank = 0; rank < 6; rank++) {
            assertThat(r.stdout()).contains("rank " + rank + " start 1");
        }
        assertThat(r.stderr()).contains("[WARN] host " + cluster.address(1) + " failed 1 time (--max-failures-per-host 1): its ranks move to "
                        + cluster.address(0) + ", " + cluster.address(2) + " from the next start")
                .contains("[WARN] job completed after 1 restart (--max-restarts 2); start 0: rank 3 on " + cluster.address(1)
                        + " exited with code 3");
        assertNoJobProcessLeft();
    }

    @Test
    void sigintEndsRemoteRanksEvenWhenTheyIgnoreHangupAndTerm(@TempDir Path dir) throws Exception {
        Requirements.require(Requirements.command("perl", "perl-base"));
        Process p = JdistCli.startLaunch(dir, env, "--hosts", allHosts(), "--",
                "sh", "-c", "trap '' HUP TERM; echo ready; while :; do sleep 1; done");
        assertThat(JdistCli.await(Duration.ofSeconds(60),
                () -> JdistCli.lines(JdistCli.read(dir.resolve("stdout"))).stream().filter("ready"::equals).count() == 3))
                .as(JdistCli.read(dir.resolve("stdout")) + JdistCli.read(dir.resolve("stderr"))).isTrue();
        JdistCli.signal(p, "INT");
        assertThat(p.waitFor(90, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isEqualTo(130);
        assertThat(JdistCli.read(dir.resolve("stderr"))).contains("[WARN] Node with rank 1 was killed");
        assertNoJobProcessLeft();
    }

    @Test
    void cwdAndEnvOnRemoteHosts(@TempDir Path dir) throws Exception {
        CommandResult r = JdistCli.launch(T, env, null, null, "--hosts", allHosts(), "--cwd", dir.toString(),
                "--env", "A=$HOME x 'q'", "--env", "1X=2", "--", "sh", "-c", "echo \"$(pwd)|$A|$MLX_RANK\"");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(JdistCli.lines(r.stdout())).containsExactlyInAnyOrder(
                dir + "|$HOME x 'q'|0", dir + "|$HOME x 'q'|1", dir + "|$HOME x 'q'|2");
        assertThat(r.stderr().split("is an invalid environment variable", -1)).hasSize(2);
        CommandResult missing = JdistCli.launch(T, env, null, null, "--hosts", cluster.address(0), "--cwd", "/no/such/dir", "--", "echo", "ran");
        assertThat(missing.exitCode()).isZero();
        assertThat(JdistCli.lines(missing.stdout())).contains("Failed to change directory to /no/such/dir", "ran");
    }

    @Test
    void aMissingRemoteProgramFailsWith127() throws Exception {
        CommandResult r = JdistCli.launch(T, env, null, null, "--hosts", allHosts(), "--", "no-such-program-jdist");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(127);
        assertThat(r.stdout()).contains("no-such-program-jdist");
        assertNoJobProcessLeft();
    }

    @Test
    void anUnreachableHostFailsWithinTheConnectTimeout() throws Exception {
        long t0 = System.nanoTime();
        CommandResult r = JdistCli.launch(T, env, null, null, "--hosts", cluster.address(0) + "," + cluster.unusedAddress(), "--",
                "sleep", "600");
        Duration took = Duration.ofNanos(System.nanoTime() - t0);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(255);
        assertThat(r.stderr()).contains("[WARN] Node with rank 1 exited with code 255")
                .contains("ssh to " + cluster.unusedAddress() + " failed (exit 255); check that 'ssh -o BatchMode=yes "
                        + cluster.unusedAddress() + " true' works without a password")
                .contains("[WARN] Node with rank 0 was killed");
        // ConnectTimeout=10 plus JVM start and the kill step of rank 0; generous for a loaded machine
        assertThat(took).isLessThan(Duration.ofSeconds(60));
        assertNoJobProcessLeft();
    }

    @Test
    void ringJobAcrossTheHostsSumsCorrectly(@TempDir Path dir) throws Exception {
        StringBuilder hf = new StringBuilder("[");
        for (int i = 0; i < 3; i++) {
            hf.append(i == 0 ? "" : ", ").append("{\"ssh\": \"").append(cluster.hostName(i)).append("\", \"ips\": [\"")
                    .append(cluster.address(i)).append("\"]}");
        }
        Path hostfile = Files.writeString(dir.resolve("hosts.json"), hf.append("]").toString());
        Path allSum = JdistCli.repoRoot().resolve("examples/AllSum.java");
        CommandResult r = JdistCli.launch(Duration.ofSeconds(200), env, null, null, "--hostfile", hostfile.toString(), allSum.toString());
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String> lines = JdistCli.lines(r.stdout()).stream().filter(l -> l.contains("array(")).toList();
        assertThat(lines).hasSize(3).allSatisfy(l -> assertThat(l).endsWith(" array([3, 3, 3, ..., 3, 3, 3], dtype=float32)"));
        assertThat(lines).extracting(l -> l.split(" ")[0]).containsExactlyInAnyOrder("0", "1", "2");
        assertNoJobProcessLeft();
    }
}
