package dev.jdist.launch;

import dev.jdist.rendezvous.ClusterCheckProgram;
import dev.jdist.testing.ClusterCheck;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.Requirements;
import dev.jdist.testing.SlurmCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jdist under a real Slurm (Debian's slurm-wlm, started by {@link SlurmCluster}): {@code srun -n 4 java ...} forms a
 * 4-rank ring from Slurm's variables, a batch script or {@code salloc} shell that runs java directly gets the documented
 * error, and {@code jdist doctor --env} says what each process found. The program is the one every cluster test runs
 * ({@link ClusterCheckProgram}: values checked on every rank).
 */
@Timeout(300)
class SlurmIT {

    private static final Duration T = Duration.ofSeconds(180);
    private static SlurmCluster slurm;
    private static Path bin;

    @BeforeAll
    static void startSlurm() throws Exception {
        slurm = SlurmCluster.start();
        // a `jdist` command for scripts: the built jar, run by this JDK
        bin = Files.createTempDirectory("jdist-slurm-bin-");
        Path jdist = bin.resolve("jdist");
        Files.writeString(jdist, "#!/bin/sh\nexec '" + JdistCli.java() + "' -jar '" + jar() + "' \"$@\"\n");
        Files.setPosixFilePermissions(jdist, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @AfterAll
    static void stopSlurm() throws Exception {
        if (slurm != null) slurm.close();
        if (bin != null) {
            Files.deleteIfExists(bin.resolve("jdist"));
            Files.deleteIfExists(bin);
        }
    }

    static Path jar() {
        JdistCli.argv(List.of()); // fails with a clear message when the jar was not built
        return JdistCli.JAR;
    }

    static String checkProgramClassPath() {
        return ClusterCheck.classPath();
    }

    /** The program every cluster test runs: values checked on every rank. */
    static List<String> checkProgram() {
        return ClusterCheck.command();
    }

    /** What the jobs get besides Slurm's own variables: a deadline, and PATH with the `jdist` wrapper. */
    static Map<String, String> jobEnv() {
        Map<String, String> env = new HashMap<>();
        env.put("JDIST_TIMEOUT", "60");
        env.put("PATH", bin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
        return env;
    }

    static void assertEveryRankOk(String output, int n) {
        ClusterCheck.assertEveryRankOk(output, n, "ring", "slurm");
    }

    @Test
    void srunStartsA4RankRingFromSlurmsVariables() {
        List<String> cmd = new ArrayList<>(List.of("srun", "-n", "4", "--kill-on-bad-exit=1"));
        cmd.addAll(checkProgram());
        CommandResult r = slurm.run(T, null, jobEnv(), cmd);
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isZero();
        assertEveryRankOk(r.stdout(), 4);
    }

    @Test
    void doctorEnvUnderSrunNamesSlurmAndTheRendezvous() {
        CommandResult r = slurm.run(T, null, jobEnv(), List.of("srun", "-n", "2", "--label", "jdist", "doctor", "--env"));
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isZero();
        for (int t = 0; t < 2; t++) {
            assertThat(r.stdout()).contains(t + ": job source: slurm")
                    .contains(t + ":   SLURM_PROCID=" + t)
                    .contains(t + ":   SLURM_STEP_NUM_TASKS=2")
                    .contains(t + ":   SLURM_LOCALID=" + t)
                    .contains(t + ": Distributed.init(): rank " + t + " of 2; meets the other ranks through the rendezvous");
        }
        Matcher port = Pattern.compile("rendezvous at localhost:(\\d+) \\(host: first node of SLURM_STEP_NODELIST=localhost; "
                + "port: port \\d+ derived from SLURM_JOB_ID=(\\d+) and SLURM_STEP_ID=0\\)").matcher(r.stdout());
        assertThat(port.find()).as(r.stdout()).isTrue();
    }

    @Test
    void aBatchScriptThatRunsJavaDirectlyWithSeveralTasksGetsTheDocumentedError(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("job.out");
        Path script = dir.resolve("direct.sbatch");
        Files.writeString(script, "#!/bin/sh\n#SBATCH --ntasks=4\n#SBATCH --output=" + out + "\n"
                + "env | grep '^SLURM_' | sort\n"
                + "echo '---- doctor'\n"
                + "jdist doctor --env\n"
                + "echo \"doctor exit $?\"\n"
                + "echo '---- java'\n"
                + String.join(" ", checkProgram()) + "\n"
                + "echo \"java exit $?\"\n");
        CommandResult r = slurm.sbatchWait(T, dir, jobEnv(), script);
        String job = JdistCli.read(out);
        assertThat(r.exitCode()).as("%s%njob output:%n%s%n%s", r, job, slurm.logs()).isZero();
        // what Slurm 22.05 sets in a batch script: the job's task count, SLURM_PROCID=0 (!), and no step id
        assertThat(job).contains("SLURM_NTASKS=4").contains("SLURM_PROCID=0").doesNotContain("SLURM_STEP_ID=")
                .doesNotContain("SLURM_STEPID=");
        String error = "runs inside Slurm job ";
        assertThat(job).contains("doctor exit 1").contains("java exit 3")
                .contains("FAILED: ConfigException: this process " + error)
                .contains("(SLURM_NTASKS=4) but not as a task of a job step (no SLURM_STEP_ID: the batch script or an salloc "
                        + "shell), so it cannot tell its rank: start the ranks with `srun` (or `jdist launch`)");
    }

    @Test
    void anSallocShellThatRunsJavaDirectlyGetsTheDocumentedError() {
        List<String> cmd = new ArrayList<>(List.of("salloc", "--ntasks=4"));
        cmd.addAll(checkProgram());
        CommandResult r = slurm.run(T, null, jobEnv(), cmd);
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isEqualTo(3);
        assertThat(r.stdout()).contains("FAILED: ConfigException: this process runs inside Slurm job ")
                .contains("(SLURM_NTASKS=4) but not as a task of a job step");
    }

    // ------------------------------------------------------------------ jdist launch inside an allocation

    @Test
    void theExampleSbatchScriptRunsAllSumOnFourRanks(@TempDir Path dir) {
        Path out = dir.resolve("allsum.out");
        Map<String, String> env = jobEnv();
        env.put("JDIST", bin.resolve("jdist").toString());
        CommandResult r = slurm.sbatchWait(T, JdistCli.repoRoot(), env, JdistCli.repoRoot().resolve("examples/slurm/allsum.sbatch"),
                "--output=" + out);
        String job = JdistCli.read(out);
        assertThat(r.exitCode()).as("%s%njob output:%n%s%n%s", r, job, slurm.logs()).isZero();
        for (int rank = 0; rank < 4; rank++) {
            assertThat(job).contains("[" + rank + "] " + rank + " array([4, 4, 4, ..., 4, 4, 4], dtype=float32)");
        }
    }

    @Test
    void anSbatchScriptWithJdistLaunchRunsTheCheckProgramOnEveryTask(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("job.out");
        Path script = dir.resolve("launch.sbatch");
        Files.writeString(script, "#!/bin/sh\n#SBATCH --ntasks=4\n#SBATCH --output=" + out + "\n"
                + "jdist launch --verbose --class-path " + checkProgramClassPath() + " " + ClusterCheckProgram.class.getName() + "\n"
                + "echo \"launch exit $?\"\n");
        CommandResult r = slurm.sbatchWait(T, dir, jobEnv(), script);
        String job = JdistCli.read(out);
        assertThat(r.exitCode()).as("%s%njob output:%n%s%n%s", r, job, slurm.logs()).isZero();
        assertThat(job).contains("launch exit 0").contains("[INFO] inside Slurm job ").contains("the ranks are placed with srun")
                .contains("--kill-on-bad-exit=1 --label");
        assertEveryRankOk(job, 4);
    }

    @Test
    void aFailingTaskEndsTheStepWithTheLaunchersReportLinesAndStatus() {
        CommandResult r = slurm.run(T, null, jobEnv(), JdistCli.argv(List.of("launch", "--launcher", "srun", "-n", "4",
                "--tag-output", "--", "sh", "-c", "echo \"hello $MLX_RANK\"; if [ \"$MLX_RANK\" = 2 ]; then sleep 1; exit 3; fi; "
                        + "sleep 120")));
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isEqualTo(3);
        for (int rank = 0; rank < 4; rank++) assertThat(r.stdout()).contains("[" + rank + "] hello " + rank);
        assertThat(r.stderr()).contains("[WARN] Node with rank 2 exited with code 3")
                .contains("[WARN] Node with rank 0 was killed").contains("[WARN] Node with rank 3 was killed")
                .contains("[ERROR] job failed: rank 2 on " + SlurmCluster.NODE + " exited with code 3");
        assertNoJobLeft();
    }

    @Test
    void maxRestartsStartsANewJobStepAfterAFailedTask() {
        CommandResult r = slurm.run(T, null, jobEnv(), JdistCli.argv(List.of("launch", "--launcher", "srun", "-n", "2",
                "--max-restarts", "1", "--", "sh", "-c", "echo \"hello $MLX_RANK start $JDIST_RESTART\"; "
                        + "if [ \"$MLX_RANK\" = 1 ] && [ \"$JDIST_RESTART\" = 0 ]; then sleep 1; exit 3; fi; "
                        + "if [ \"$JDIST_RESTART\" = 0 ]; then sleep 120; fi")));
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isZero();
        assertThat(r.stdout()).contains("hello 1 start 0", "hello 0 start 1", "hello 1 start 1");
        assertThat(r.stderr()).contains("[WARN] restart 1 of at most 1: rank 1 on " + SlurmCluster.NODE + " exited with code 3")
                .contains("[WARN] job completed after 1 restart (--max-restarts 1); start 0: rank 1 on " + SlurmCluster.NODE);
        assertNoJobLeft();
    }

    @Test
    void aCommandThatIsNotJavaGetsMlxsRingVariables() {
        // the check program started as a plain command: it forms the ring from MLX_RANK/MLX_HOSTFILE, as under mlx.launch
        List<String> cmd = new ArrayList<>(List.of("launch", "--launcher", "srun", "-n", "4", "--"));
        cmd.addAll(checkProgram());
        CommandResult r = slurm.run(T, null, jobEnv(), JdistCli.argv(cmd));
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isZero();
        for (int rank = 0; rank < 4; rank++) {
            assertThat(r.stdout()).contains("rank " + rank + " of 4: OK (backend ring, source mlx-variables)");
        }
        CommandResult sh = slurm.run(T, null, jobEnv(), JdistCli.argv(List.of("launch", "--launcher", "srun", "-n", "3", "--",
                "sh", "-c", "echo \"rank=$MLX_RANK source=${JDIST_JOB_SOURCE:-unset} $(cat \"$MLX_HOSTFILE\")\"")));
        assertThat(sh.exitCode()).as(sh.toString()).isZero();
        List<String> lines = JdistCli.lines(sh.stdout());
        assertThat(lines).hasSize(3);
        String hostfile = lines.getFirst().substring(lines.getFirst().indexOf(" [[") + 1);
        assertThat(hostfile).matches("\\[\\[\"127\\.0\\.0\\.1:\\d+\"\\](, ?\\[\"127\\.0\\.0\\.1:\\d+\"\\]){2}\\]");
        for (int rank = 0; rank < 3; rank++) assertThat(lines).contains("rank=" + rank + " source=unset " + hostfile);
    }

    @Test
    void sigtermToTheLauncherEndsTheStep(@TempDir Path dir) throws Exception {
        Requirements.require(Requirements.command("perl", "perl-base"));
        String marker = JdistCli.sleepMarker();
        Map<String, String> env = jobEnv();
        env.putAll(slurm.env());
        Process p = JdistCli.startLaunch(dir, env, "--launcher", "srun", "-n", "2", "--", "sh", "-c", "echo ready; sleep " + marker);
        try {
            assertThat(JdistCli.await(Duration.ofSeconds(90),
                    () -> JdistCli.lines(JdistCli.read(dir.resolve("stdout"))).stream().filter("ready"::equals).count() == 2))
                    .as(JdistCli.read(dir.resolve("stdout")) + JdistCli.read(dir.resolve("stderr"))).isTrue();
            JdistCli.signal(p, "TERM");
            assertThat(p.waitFor(90, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(JdistCli.read(dir.resolve("stderr"))).isEqualTo(143);
            assertThat(JdistCli.read(dir.resolve("stderr"))).contains("[WARN] Node with rank 0 was killed")
                    .contains("[WARN] Node with rank 1 was killed");
            assertThat(JdistCli.await(Duration.ofSeconds(30), () -> JdistCli.processesWith(marker).isEmpty()))
                    .as("left running: %s", JdistCli.processesWith(marker)).isTrue();
            assertNoJobLeft();
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void dryRunShowsTheSrunPlan() {
        Map<String, String> env = jobEnv();
        env.putAll(Map.of("SLURM_JOB_ID", "99", "SLURM_NTASKS", "4"));   // as in a batch script: auto chooses srun
        CommandResult r = JdistCli.run(T, env, "launch", "--dry-run", "--env", "X=1", "--class-path", "/app", "app.Main");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout()).contains("# dry run: nothing is started")
                .contains("srun: " + Requirements.findOnPath("srun").orElseThrow() + " --kill-on-bad-exit=1 --label --input=all "
                        + "--export=ALL -- ")
                .contains("ranks: 4: the allocation's task count")
                .contains("env: X=1").contains("env: JDIST_JOB_SOURCE=slurm").contains("env: JDIST_JOB_TOKEN=")
                .contains("unset: MLX_RANK MLX_HOSTFILE");
    }

    /** No job of the cluster is left (bounded wait: a cancelled step takes a moment to go). */
    private static void assertNoJobLeft() {
        CommandResult[] last = new CommandResult[1];
        boolean empty = false;
        try {
            empty = JdistCli.await(Duration.ofSeconds(30), () -> {
                last[0] = slurm.run(Duration.ofSeconds(10), null, Map.of(), List.of("squeue", "-h"));
                return last[0].ok() && last[0].stdout().isBlank();
            });
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        assertThat(empty).as("jobs left: %s", last[0]).isTrue();
    }
}
