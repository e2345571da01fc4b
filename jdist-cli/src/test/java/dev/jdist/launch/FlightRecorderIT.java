package dev.jdist.launch;

import dev.jdist.flight.FlightDump;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Flight records of real 3-rank ring jobs on loopback ({@link FlightScenario}): a job whose ranks call different
 * collectives, one whose rank stops (SIGSTOP), one whose rank computes while the others wait, and records asked
 * for with SIGUSR1 in a job that succeeds. After each failed job, {@code jdist launch} prints the analysis, and
 * {@code jdist doctor analyze} prints the same from the job's directory.
 */
@Timeout(240)
class FlightRecorderIT {

    private static final Duration T = Duration.ofSeconds(200);
    private static final Path CLASSES = Path.of("target/test-classes").toAbsolutePath();

    @TempDir
    Path base;

    @BeforeAll
    static void testClassesBuilt() {
        assumeTrue(Files.isDirectory(CLASSES), "test classes not built");
    }

    private CommandResult launch(String scenario) throws IOException {
        return launch(scenario, "JDIST_TIMEOUT=8");
    }

    /** {@code scenario} with these {@code --env} settings. */
    private CommandResult launch(String scenario, String... envSettings) throws IOException {
        int port = FreePorts.block(3);
        List<String> args = new java.util.ArrayList<>(List.of("-n", "3", "-p", Integer.toString(port)));
        for (String e : envSettings) args.addAll(List.of("--env", e));
        args.addAll(List.of("--class-path", CLASSES.toString(), FlightScenario.class.getName(), scenario));
        // a short progress deadline, so the waiting ranks give up soon
        return JdistCli.launch(T, Map.of("JDIST_LAUNCH_BACKEND", "ring", "JDIST_DUMP_DIR", base.toString()), null, null,
                args.toArray(String[]::new));
    }

    private Path jobDir() throws IOException {
        try (Stream<Path> s = Files.list(base)) {
            List<Path> jobs = s.filter(p -> p.getFileName().toString().startsWith("jdist-job-")).toList();
            assertThat(jobs).hasSize(1);
            return jobs.get(0);
        }
    }

    /** The analysis lines launch printed (indented under its header line). */
    private static List<String> analysis(CommandResult r) {
        List<String> lines = r.stderr().lines().toList();
        int header = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("flight records of the job")) header = i;
        }
        assertThat(header).as(r.toString()).isNotNegative();
        return lines.subList(header + 1, lines.size()).stream().takeWhile(l -> l.startsWith("  ")).map(String::strip).toList();
    }

    /** {@code jdist doctor analyze DIR} says what launch said. */
    private static void doctorAgrees(Path job, List<String> launchLines) {
        CommandResult d = JdistCli.run(Duration.ofSeconds(60), Map.of(), "doctor", "analyze", "--ranks", "3", job.toString());
        assertThat(d.exitCode()).as(d.toString()).isZero();
        assertThat(d.stdout().lines().toList()).isEqualTo(launchLines);
    }

    @Test
    void ranksCallingDifferentCollectivesAreNamedWithTheirCalls() throws Exception {
        CommandResult r = launch("mismatch");
        assertThat(r.exitCode()).as(r.toString()).isNotZero();
        assertThat(r.stderr()).contains("[WARN] Node with rank");   // the MLX report lines are still there
        List<String> lines = analysis(r);
        assertThat(lines).as(r.toString()).contains("group world (ring, 3 ranks): records from all 3 ranks",
                "ranks disagree on operation #5: ranks 0, 2 call all_gather int32[12]; rank 1 calls all_sum float32[1024]");
        assertThat(lines).anyMatch(l -> l.startsWith("first failure: rank "));
        Path job = jobDir();
        assertThat(FlightDump.files(job)).hasSize(3);
        doctorAgrees(job, lines);
    }

    @Test
    void aStoppedRankIsTheOneWithoutARecord() throws Exception {
        // the deadline (8 s) ends the wait, well before the watch's bound (48 s of a 60 s heartbeat): with the default
        // heartbeat both come at 8 s, and which of them ended the wait varied from run to run
        CommandResult r = launch("stop", "JDIST_TIMEOUT=8", "JDIST_HEARTBEAT=60s");
        assertThat(r.exitCode()).as(r.toString()).isNotZero();
        List<String> lines = analysis(r);
        assertThat(lines).as(r.toString()).contains("group world (ring, 3 ranks): records from ranks 0, 2; none from rank 1")
                .anyMatch(l -> l.startsWith("rank 1 left no flight record"))
                .anyMatch(l -> l.matches("ranks 0, 2 (failed in|are in) all_sum float32\\[1024] #5.*"));
        doctorAgrees(jobDir(), lines);
    }

    @Test
    void aRankThatIsStillComputingIsBehind() throws Exception {
        CommandResult r = launch("behind");
        assertThat(r.exitCode()).as(r.toString()).isNotZero();
        List<String> lines = analysis(r);
        assertThat(lines).as(r.toString()).contains("group world (ring, 3 ranks): records from all 3 ranks")
                .anyMatch(l -> l.startsWith("rank 1 has finished all_sum float32[1024] #4 and is in no operation"))
                .anyMatch(l -> l.startsWith("behind: rank 1 at #4 (finished it ") && l.endsWith("ranks 0, 2 are at #5"));
        // rank 1 wrote its record when the launcher ended it
        Path job = jobDir();
        FlightDump one = FlightDump.files(job).stream().map(FlightRecorderIT::read)
                .filter(d -> d.groups().get(0).rank() == 1).findFirst().orElseThrow();
        assertThat(one.reason()).isIn("signal SIGTERM", "signal SIGHUP");
        assertThat(one.failure()).isNull();
        doctorAgrees(job, lines);
    }

    @Test
    void sigusr1WritesARecordAndTheJobGoesOn() throws Exception {
        CommandResult r = launch("usr1");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(JdistCli.lines(r.stdout())).contains("rank 0 record written", "rank 1 record written", "rank 2 record written",
                "rank 0 done", "rank 1 done", "rank 2 done");
        assertThat(r.stderr()).doesNotContain("flight records of the job");   // the job succeeded: no analysis
        List<Path> files = FlightDump.files(jobDir());
        assertThat(files).hasSize(3);
        for (Path f : files) {
            FlightDump d = read(f);
            assertThat(d.reason()).isEqualTo("signal SIGUSR1");
            assertThat(d.groups().get(0).operations()).isEqualTo(5);
        }
    }

    private static FlightDump read(Path f) {
        try {
            return FlightDump.read(f);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
