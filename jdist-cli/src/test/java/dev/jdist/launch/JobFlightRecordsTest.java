package dev.jdist.launch;

import dev.jdist.console.ConsoleLog;
import dev.jdist.flight.FlightDump;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The job's flight-record directory: its name, reading remote records back, the report after a failed job. */
@Timeout(60)
class JobFlightRecordsTest {

    @TempDir
    Path dir;

    private static FlightDump dump(int rank, String state, String failure) {
        var op = new FlightDump.Operation(3, "all_sum", "float32", List.of(8), null, 32, -1, false, state,
                failure, "2026-12-03T10:00:00Z", state.equals(FlightDump.STARTED) ? null : "2026-12-03T10:00:05Z",
                state.equals(FlightDump.STARTED) ? null : 5_000_000L);
        return new FlightDump(FlightDump.FORMAT, FlightDump.VERSION, "failure", "2026-12-03T10:00:06Z", "h" + rank, 100 + rank,
                "0.1.0", 1024, failure == null ? null : new FlightDump.Failure("world", rank, 3, "all_sum float32[8]", failure,
                "2026-12-03T10:00:05Z"), List.of(new FlightDump.GroupRecord("world", "ring", rank, 3, 4, List.of(op))));
    }

    @Test
    void aJobsDirectoryIsNewAndUnderTheLaunchersJdistDumpDir() {
        Path a = JobFlightRecords.forNewJob(Map.of("JDIST_DUMP_DIR", dir.toString())).dir();
        Path b = JobFlightRecords.forNewJob(Map.of("JDIST_DUMP_DIR", dir.toString())).dir();
        assertThat(a.getParent()).isEqualTo(dir);
        assertThat(a.getFileName().toString()).matches("jdist-job-\\d{8}-\\d{6}-[0-9a-f]{6}");
        assertThat(a).isNotEqualTo(b);
        assertThat(JobFlightRecords.forNewJob(Map.of()).dir().getParent()).isEqualTo(Path.of(System.getProperty("java.io.tmpdir")));
        assertThat(a).doesNotExist();   // created by the first rank that writes a record
    }

    @Test
    void theFetchScriptPrintsEveryRecordAndOnlyRecords() throws Exception {
        Path job = Files.createDirectories(dir.resolve("job with 'quote"));
        String r0 = dump(0, FlightDump.FAILED, "DeadlineExceededException: x").toJson();
        String r2 = dump(2, FlightDump.STARTED, null).toJson();
        Files.writeString(job.resolve("jdist-flight-rank-0-100.json"), r0);
        Files.writeString(job.resolve("jdist-flight-rank-2-102.json"), r2);
        Files.writeString(job.resolve(".jdist-flight-rank-1-101.json.tmp"), "partial");
        Files.writeString(job.resolve("notes.txt"), "not a record");

        Process p = new ProcessBuilder("sh", "-c", JobFlightRecords.fetchScript(job.toString())).redirectErrorStream(true).start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

        Map<String, String> files = JobFlightRecords.parseFetched(out);
        assertThat(files).containsOnlyKeys("jdist-flight-rank-0-100.json", "jdist-flight-rank-2-102.json");
        assertThat(FlightDump.parse(files.get("jdist-flight-rank-0-100.json"), "x")).isEqualTo(FlightDump.parse(r0, "y"));
        assertThat(FlightDump.parse(files.get("jdist-flight-rank-2-102.json"), "x")).isEqualTo(FlightDump.parse(r2, "y"));
        // an empty directory, or none, prints nothing
        Process none = new ProcessBuilder("sh", "-c", JobFlightRecords.fetchScript(dir.resolve("missing").toString())).start();
        assertThat(none.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(none.getInputStream().readAllBytes()).isEmpty();
    }

    @Test
    void namesThatAreNotRecordsAreNotWritten() {
        String out = JobFlightRecords.MARK + "../../etc/passwd\nx\n" + JobFlightRecords.MARK + "jdist-flight-rank-1-5.json\n{}\n";
        assertThat(JobFlightRecords.parseFetched(out)).containsOnlyKeys("jdist-flight-rank-1-5.json");
    }

    @Test
    void aFailedJobsRecordsArePrintedAsOneAnalysis() throws Exception {
        Path job = Files.createDirectories(dir.resolve("job"));
        Files.writeString(job.resolve("jdist-flight-rank-0-100.json"), dump(0, FlightDump.FAILED, "DeadlineExceededException: x").toJson());
        Files.writeString(job.resolve("jdist-flight-rank-2-102.json"), dump(2, FlightDump.STARTED, null).toJson());
        Files.writeString(job.resolve("jdist-flight-rank-9-109.json"), "{");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        ConsoleLog log = new ConsoleLog(new PrintStream(err, true, StandardCharsets.UTF_8), false, false);

        JobFlightRecords.in(job).afterJob(false, List.of(), 3, Map.of(), "ssh", log);

        List<String> lines = err.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines.subList(0, lines.size() - 1)).containsExactly(
                "[WARN] flight records of the job (2 in " + job + "; again with: jdist doctor analyze " + job + "): ",
                "  group world (ring, 3 ranks): records from ranks 0, 2; none from rank 1",
                "  rank 0 failed in all_sum float32[8] #3 (DeadlineExceededException); rank 2 is in all_sum float32[8] #3",
                "  rank 1 left no flight record: stopped (SIGSTOP) or killed (SIGKILL) before writing one, not a jdist program, "
                        + "or running with JDIST_FLIGHT_RECORDER=0",
                "  every rank with a record is inside an operation: the one without a record (rank 1) most likely never joined it",
                "  first failure: rank 0 of world on h0 (pid 100) at 10:00:05.000 UTC, in all_sum float32[8] #3: DeadlineExceededException: x");
        assertThat(lines.get(lines.size() - 1))
                .startsWith("  " + job.resolve("jdist-flight-rank-9-109.json") + " is not a jdist flight record: not JSON");
        assertThat(job).exists();
    }

    @Test
    void aSucceededJobPrintsNothingAndLeavesNoEmptyDirectory() throws Exception {
        Path job = Files.createDirectories(dir.resolve("job"));
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        ConsoleLog log = new ConsoleLog(new PrintStream(err, true, StandardCharsets.UTF_8), false, false);
        JobFlightRecords.in(job).afterJob(true, List.of(), 2, Map.of(), "ssh", log);
        assertThat(job).doesNotExist();
        JobFlightRecords.in(job).afterJob(false, List.of(), 2, Map.of(), "ssh", log);   // failed, but no rank wrote a record
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
    }
}
