package dev.jdist.launch;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.ToolProvider;
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
 * {@code jdist launch --max-restarts} with real processes (docs/launching.md, "Restarting a failed job"): a rank killed
 * on the first start, the job started again and resumed from its checkpoints (examples/DataParallel.java, compiled
 * once here so the ranks skip source-file compilation); the limit K; {@code --max-failures-per-host}; nothing left running.
 */
@Timeout(300)
class RestartLaunchIT {
    private static final Duration T = Duration.ofSeconds(240);
    private static final Map<String, String> RING = Map.of("JDIST_LAUNCH_BACKEND", "ring");
    private static final Pattern CRC = Pattern.compile("rank (\\d) of 4: weights crc32=([0-9a-f]{8})");
    private static final Pattern LOSS = Pattern.compile("loss ([0-9.]+) after 200 iterations");

    @TempDir
    static Path classes;

    @BeforeAll
    static void compileTheExample() {
        Path source = JdistCli.repoRoot().resolve("examples/DataParallel.java");
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, System.err,
                "-cp", JdistCli.JAR.toString(), "-d", classes.toString(), "-proc:none", source.toString());
        assertThat(rc).as("javac examples/DataParallel.java").isZero();
    }

    private static CommandResult dataParallel(Map<String, String> env, String mark, String... launchArgs) throws Exception {
        List<String> args = new ArrayList<>(List.of("-n", "4", "-p", String.valueOf(FreePorts.block(4)),
                "--java-opt", "-Dtest.mark=" + mark));
        args.addAll(List.of(launchArgs));
        args.addAll(List.of("--class-path", classes.toString(), "DataParallel"));
        Map<String, String> all = new HashMap<>(RING);
        all.putAll(env);
        CommandResult r = JdistCli.launch(T, all, null, null, args.toArray(String[]::new));
        assertThat(r.timedOut()).as("launch timed out: %s", r).isFalse();
        return r;
    }

    private static List<String> crcs(CommandResult r) {
        Matcher m = CRC.matcher(r.stdout());
        List<String> out = new ArrayList<>();
        while (m.find()) out.add(m.group(2));
        return out;
    }

    private static String loss(CommandResult r) {
        Matcher m = LOSS.matcher(r.stdout());
        assertThat(m.find()).as("the final loss line in %s", r.stdout()).isTrue();
        return m.group(1);
    }

    @Test
    void aRankKilledOnTheFirstStartIsRestartedAndTheJobEndsWithTheWeightsOfARunWithoutFailure(@TempDir Path ckpt) throws Exception {
        String mark = JdistCli.sleepMarker();
        CommandResult clean = dataParallel(Map.of(), mark);
        assertThat(clean.exitCode()).as(clean.toString()).isZero();

        CommandResult r = dataParallel(Map.of("DP_CHECKPOINTS", ckpt.toString(), "DP_SAVE_EVERY", "20", "DP_FAULT", "2:50:KILL"),
                mark, "--max-restarts", "1");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout()).contains("rank 2: SIGKILL to myself before step 50");
        for (int rank = 0; rank < 4; rank++) {
            assertThat(r.stdout()).as("rank %d on each start", rank)
                    .contains("rank " + rank + ": restart 0, starting at step 0")
                    .contains("rank " + rank + ": restart 1, starting at step 40");
        }
        assertThat(r.stderr()).contains("[WARN] restart 1 of at most 1: rank 2 on 127.0.0.1 exited with code 137 (SIGKILL)")
                .contains("[WARN] job completed after 1 restart (--max-restarts 1); start 0: rank 2 on 127.0.0.1 exited with code 137");
        assertThat(crcs(r)).as(r.stdout()).hasSize(4).containsOnly(crcs(clean).getFirst());
        assertThat(crcs(clean)).hasSize(4).containsOnly(crcs(clean).getFirst());
        assertThat(loss(r)).isEqualTo(loss(clean));
        assertThat(r.stdout()).contains("weights identical on all 4 ranks");
        assertThat(JdistCli.await(Duration.ofSeconds(10), () -> JdistCli.processesWith(mark).isEmpty()))
                .as("left over: %s", JdistCli.processesWith(mark)).isTrue();
    }

    @Test
    void withoutMaxRestartsAFailedJobEndsAsBeforeAndARankThatAlwaysFailsEndsAfterKRestarts() throws Exception {
        String mark = JdistCli.sleepMarker();
        String script = "echo \"rank $MLX_RANK start ${JDIST_RESTART-unset}\"; if [ $MLX_RANK = 1 ]; then exit 3; fi; sleep " + mark + " & wait";

        CommandResult once = JdistCli.launch(T, RING, null, null, "-n", "2", "--", "sh", "-c", script);
        assertThat(once.exitCode()).as(once.toString()).isEqualTo(3);
        assertThat(once.stdout()).contains("rank 1 start unset").doesNotContain("start 1");
        assertThat(once.stderr()).contains("[ERROR] job failed: rank 1 on 127.0.0.1 exited with code 3").doesNotContain("restart");

        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "2", "--max-restarts", "2", "--", "sh", "-c", script);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
        assertThat(r.stdout()).contains("rank 1 start 0", "rank 1 start 1", "rank 1 start 2").doesNotContain("start 3"); // rank 0 may be ended before it prints
        List<String> err = JdistCli.lines(r.stderr());
        assertThat(err).anyMatch(l -> l.contains("[WARN] restart 1 of at most 2: rank 1 on 127.0.0.1 exited with code 3"))
                .anyMatch(l -> l.contains("[WARN] restart 2 of at most 2: rank 1 on 127.0.0.1 exited with code 3"));
        assertThat(err.getLast()).contains("[ERROR] job failed after 2 restarts, all that --max-restarts 2 allows; "
                + "start 0: rank 1 on 127.0.0.1 exited with code 3; start 1: rank 1 on 127.0.0.1 exited with code 3; "
                + "start 2: rank 1 on 127.0.0.1 exited with code 3");
        assertThat(JdistCli.await(Duration.ofSeconds(10), () -> JdistCli.processesWith(mark).isEmpty()))
                .as("left over: %s", JdistCli.processesWith(mark)).isTrue();
    }

    @Test
    void aHostThatFailsTooOftenIsExcludedAndWithNoHostLeftTheJobEnds() {
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "2", "--max-restarts", "5", "--max-failures-per-host", "2",
                "--", "sh", "-c", "echo \"start $JDIST_RESTART\"; exit 4");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(4);
        assertThat(r.stdout()).contains("start 1").doesNotContain("start 2");
        assertThat(JdistCli.lines(r.stderr()).getLast()).contains("[ERROR] host 127.0.0.1 failed 2 times (--max-failures-per-host 2) "
                + "and no other host is left for the job's 2 ranks; ending the job after 1 restart");
    }

    @Test
    void badRestartOptionsAreRefusedBeforeAnythingStarts() {
        CommandResult neg = JdistCli.launch(T, RING, null, null, "--max-restarts", "-1", "--", "true");
        assertThat(neg.exitCode()).isEqualTo(2);
        assertThat(neg.stderr()).contains("--max-restarts: must be 0 or more");
        CommandResult alone = JdistCli.launch(T, RING, null, null, "--max-failures-per-host", "2", "--", "true");
        assertThat(alone.exitCode()).isEqualTo(2);
        assertThat(alone.stderr()).contains("--max-failures-per-host 2 needs --max-restarts K");
    }
}
