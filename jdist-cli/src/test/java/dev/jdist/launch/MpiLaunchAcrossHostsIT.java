package dev.jdist.launch;

import dev.jdist.testing.LongTest;
import dev.jdist.mpi.MpiBackend;
import dev.jdist.mpi.MpiCheckProgram;
import dev.jdist.mpi.MpiStallProgram;
import dev.jdist.testing.ClusterCheck;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.JavaCommand;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.NetnsCluster;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jdist launch --backend mpi} across three network-namespace hosts ({@link NetnsCluster}): Open MPI's
 * {@code mpirun} starts every rank over ssh, so a rank sees only what {@code mpirun} forwards. The launcher's job token
 * and flight-record directory reach the ranks through {@code mpirun}'s environment (Open MPI's env list), not its
 * command line: the ranks agree as jdist ranks and run the liveness watch, which ends a job whose rank is stopped long
 * before {@code JDIST_TIMEOUT} (30 minutes with the watch); with {@code --mlx-compatible} there is no token and no watch.
 */
@Timeout(420)
class MpiLaunchAcrossHostsIT {
    private static final Duration T = Duration.ofSeconds(240);
    private static NetnsCluster cluster;
    private static Map<String, String> env;

    @BeforeAll
    static void startCluster() throws Exception {
        Requirements.netnsCluster();
        Requirements.require(Requirements.file("/usr/bin/mpirun.openmpi"));
        cluster = NetnsCluster.start(3);
        // the launcher uses the first `mpirun` on PATH: Open MPI's, whatever the alternatives say
        Path bin = Files.createDirectories(cluster.directory().resolve("launcher-bin"));
        Files.deleteIfExists(bin.resolve("mpirun"));
        Files.createSymbolicLink(bin.resolve("mpirun"), Path.of("/usr/bin/mpirun.openmpi"));
        env = new HashMap<>();
        env.put("PATH", bin + ":" + cluster.launcherPath());   // then our ssh wrapper: ssh -F <cluster config>
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    /** jdist launch --backend mpi over the three hosts, one rank each, running {@code program} with {@code args}. */
    private static CommandResult launch(List<String> launchOptions, Class<?> program, String... args) {
        String subnet = cluster.subnet(0);
        // ssh from mpirun only (no tree spawn: the hosts have no ssh config of their own); TCP between the ranks, on
        // the cluster's network; orte_startup_timeout: a daemon that never reports back fails the run
        String mpiArgs = "--allow-run-as-root --mca plm_rsh_agent ssh --mca plm_rsh_no_tree_spawn 1 --mca orte_startup_timeout 60"
                + " --mca btl tcp,self --mca btl_tcp_if_include " + subnet + " --mca oob_tcp_if_include " + subnet;
        List<String> argv = new ArrayList<>(List.of("--backend", "mpi", "--hosts", String.join(",", cluster.hostNames()),
                "--mpi-arg", mpiArgs));
        argv.addAll(launchOptions);
        argv.add("--");
        JdistCli.argv(List.of());   // a clear message when the jar was not built
        argv.addAll(JavaCommand.command(JdistCli.JAR + ":" + ClusterCheck.classPath(), List.of("-Xmx128m"), program.getName()));
        argv.addAll(List.of(args));
        return JdistCli.launch(T, env, null, null, argv.toArray(String[]::new));
    }

    private static void assertNoJobProcessLeft(List<Long> pids) throws InterruptedException {
        boolean clean = JdistCli.await(Duration.ofSeconds(30), () -> cluster.processesInAll().values().stream().allMatch(List::isEmpty));
        for (long pid : pids) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);   // a failed check leaves nothing
        assertThat(clean).as("processes left in the namespaces: %s", cluster.processesInAll()).isTrue();
    }

    private static List<Long> rankPids(String out) {
        List<Long> pids = new ArrayList<>();
        Matcher m = Pattern.compile("PID (\\d+) (\\d+)").matcher(out);
        while (m.find()) pids.add(Long.parseLong(m.group(2)));
        return pids;
    }

    @Test
    void everyCollectiveChecksOutOnThreeHostsWithTheWatchRunning() throws Exception {
        CommandResult r = launch(List.of("--env", "JDIST_HEARTBEAT=2s"), MpiCheckProgram.class, "3");
        assertThat(r.timedOut()).as("launch timed out: %s", r).isFalse();
        assertThat(r.exitCode()).as("%s", r).isZero();
        for (int rank = 0; rank < 3; rank++) assertThat(r.stdout()).contains("MPI-CHECK OK rank " + rank + " of 3");
        assertThat(r.stdout() + r.stderr()).doesNotContain("MPI-CHECK FAILED").doesNotContain("Exception");
        assertNoJobProcessLeft(List.of());
    }

    @Test
    void aStoppedRankOnAnotherHostEndsTheJobThroughTheWatchAndTheLauncherPrintsTheFlightRecords() throws Exception {
        CommandResult r = launch(List.of("--env", "JDIST_HEARTBEAT=2s"), MpiStallProgram.class, "1", "all_sum");
        String out = r.stdout() + r.stderr();
        List<Long> pids = rankPids(out);
        assertThat(r.timedOut()).as("the job must end long before JDIST_TIMEOUT (30 min with the watch): %s", r).isFalse();
        assertThat(out).as("every rank started: %s", r).contains("FIRST OK 0", "FIRST OK 1", "FIRST OK 2", "STOPPING 1");
        assertThat(r.exitCode()).as("mpirun's status after MPI_Abort: %s", r).isNotZero();
        // the watch could run only because every rank, on every host, got the launcher's job token
        assertThat(out).as("%s", r).contains("dev.jdist.PeerUnresponsiveException: ").contains("its process is stopped")
                .contains("MPI_Abort").doesNotContain("RETURNED");
        // the ranks wrote their records into the job's directory, which the launcher analysed
        assertThat(r.stderr()).as("%s", r).contains("flight records of the job").contains("jdist doctor analyze");
        assertNoJobProcessLeft(pids);
    }

    /**
     * Rank 1 cuts its host off (iptables DROP in its namespace): the other ranks' watch names it and they call
     * MPI_Abort, but mpirun waits for its daemon on the cut host for as long as the cut lasts. The launcher ends mpirun
     * a bounded time after the abort notice, and rank 1 ends itself when its own MPI_Abort cannot reach mpirun: no rank
     * is left, while the host is still cut off. (Open MPI's daemon there stays until it finds mpirun gone.)
     */
    @LongTest   // a network fault waited out over three hosts; LivenessAcrossHostsIT checks a partition in the default tier
    @Test
    void aHostCutOffTheNetworkEndsTheJobWithinTheBoundsAndNoRankIsLeft() throws Exception {
        Requirements.require(Requirements.command("iptables", "iptables"));
        try {
            CommandResult r = launch(List.of("--env", "JDIST_HEARTBEAT=3s"), MpiStallProgram.class, "1", "partition");
            String out = r.stdout() + r.stderr();
            List<Long> pids = rankPids(out);
            assertThat(r.timedOut()).as("the job must end while the host is still cut off: %s", r).isFalse();
            assertThat(out).as("every rank started: %s", r).contains("FIRST OK 0", "FIRST OK 1", "FIRST OK 2", "CUTTING 1");
            assertThat(pids).as("%s", r).hasSize(3);
            assertThat(r.exitCode()).as("MPI_Abort's status: %s", r).isEqualTo(MpiBackend.ABORT_EXIT_CODE);
            assertThat(out).as("%s", r).containsPattern("dev\\.jdist\\.PeerUnresponsiveException: rank [02]: rank 1 ")
                    .contains(MpiBackend.ABORT_NOTICE).doesNotContain("RETURNED");
            // every rank, the one on the cut host included, ends while the cut lasts
            boolean ranksGone = JdistCli.await(Duration.ofSeconds(20), () -> pids.stream().noneMatch(p -> ProcessHandle.of(p).isPresent()));
            assertThat(ranksGone).as("ranks still running: %s in %s", pids, cluster.processesInAll()).isTrue();
        } finally {
            cluster.exec(1, Duration.ofSeconds(20), "iptables", "-F");
            // Open MPI's daemon on the cut host outlives its mpirun until it notices: it is this test's, end it
            for (long pid : cluster.processesIn(1)) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Test
    void theTokenIsPassedByNameAndMlxCompatibleKeepsMlxsCommandLine() {
        CommandResult d = launch(List.of("--dry-run"), MpiCheckProgram.class, "3");
        assertThat(d.exitCode()).as("%s", d).isZero();
        String mpirunLine = d.stdout().lines().filter(l -> l.startsWith("mpirun: ")).findFirst().orElseThrow();
        assertThat(mpirunLine).contains(" -x JDIST_JOB_TOKEN -x JDIST_DUMP_DIR ").doesNotContain("JDIST_JOB_TOKEN=");
        assertThat(d.stdout()).contains("mpirun's environment: JDIST_JOB_TOKEN=(a fresh job token)");
        CommandResult c = launch(List.of("--mlx-compatible", "--dry-run"), MpiCheckProgram.class, "3");
        assertThat(c.exitCode()).as("%s", c).isZero();
        assertThat(c.stdout()).doesNotContain("JDIST_JOB_TOKEN");
        assertThat(c.stdout().lines().filter(l -> l.startsWith("mpirun: ")).findFirst().orElseThrow()).doesNotContain("JDIST_");
    }
}
