package dev.jdist.mpi;

import dev.jdist.testing.LongTest;
import dev.jdist.testing.JavaCommand;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A stopped rank cannot hang an MPI job: under {@code mpirun.openmpi} and {@code mpirun.mpich}, 3 ranks,
 * {@code JDIST_TIMEOUT=5s}; one rank stops itself (SIGSTOP) and the others' next operation must end the job
 * within the deadline (plus the launcher's teardown): a DeadlineExceededException naming the rank, the
 * operation and the deadline on stderr, MPI_Abort's exit status, and every rank process gone afterwards.
 */
class MpiFaultIT {
    private static final long LIMIT_SECONDS = 180;
    private static final int DEADLINE_SECONDS = 5;

    /**
     * {@code deadline}: JDIST_TIMEOUT=5s ends the wait. {@code watch}: a job token, so the liveness watch runs; JDIST_TIMEOUT
     * unset (30 min) and JDIST_HEARTBEAT=2s: the watch finds the stopped rank and ends the job long before the deadline.
     * {@code plain}: plain {@code mpirun}, no token and no JDIST_TIMEOUT (120 s without the watch), JDIST_HEARTBEAT=2s: the
     * ranks meet beside the group through the rendezvous store and get the watch, which ends the job within its bound.
     */
    @ParameterizedTest(name = "{0}: rank {1} stopped, the others in {2}, found by the {3}")
    @CsvSource({"openmpi, 1, all_sum, deadline", "mpich, 2, recv, deadline", "openmpi, 1, all_sum, watch",
        "openmpi, 1, all_sum, plain"})
    @Timeout(value = LIMIT_SECONDS + 60, unit = TimeUnit.SECONDS)
    void aStoppedRankEndsTheJobWithinTheDeadlineWithTheTypedErrorAndLeavesNoProcess(String impl, int stopped, String op,
                                                                                         String detector) throws Exception {
        check(impl, stopped, op, detector);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0}: rank {1} stopped, the others in {2}, found by the {3}")
    @CsvSource({"openmpi, 2, recv, deadline", "openmpi, 1, close, deadline", "mpich, 1, all_gather, deadline",
        "mpich, 0, sum_scatter, deadline", "mpich, 2, recv, watch"})
    @Timeout(value = LIMIT_SECONDS + 60, unit = TimeUnit.SECONDS)
    void aStoppedRankEndsTheJobRestOfTheSweep(String impl, int stopped, String op, String detector) throws Exception {
        check(impl, stopped, op, detector);
    }

    private void check(String impl, int stopped, String op, String detector) throws Exception {
        boolean watch = !detector.equals("deadline");
        boolean openMpi = impl.equals("openmpi");
        String launcherName = openMpi ? "mpirun.openmpi" : "mpirun.mpich";
        var launcher = Requirements.findExecutable(launcherName);
        Requirements.require(launcher.isPresent(), launcherName + " is not installed (Debian: "
                + (openMpi ? "openmpi-bin libopenmpi-dev" : "mpich libmpich-dev") + ")");
        var lib = Requirements.findLibrary(openMpi ? "libmpi.so.40" : "libmpich.so.12");
        Requirements.require(lib.isPresent(), "the " + impl + " library is not installed");

        List<String> cmd = new ArrayList<>();
        cmd.add(launcher.get().toString());
        if (openMpi) cmd.addAll(List.of("--allow-run-as-root", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"));
        cmd.addAll(List.of("-n", "3"));
        // jdist's flags: libmpi is bound with java.lang.foreign
        cmd.addAll(JavaCommand.of(List.of("-Xmx128m"), MpiStallProgram.class, Integer.toString(stopped), op));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        Map<String, String> env = pb.environment();
        for (String k : List.of("MPI_LIBNAME", "MLX_RANK", "MLX_HOSTFILE", "NCCL_HOST_IP", "MLX_JACCL_COORDINATOR", "JDIST_MPI_INIT")) {
            env.remove(k);
        }
        env.put("MLX_MPI_LIBNAME", lib.get().toString());
        env.remove("JDIST_TIMEOUT");
        env.remove("JDIST_JOB_TOKEN");
        if (watch) {
            if (detector.equals("watch")) env.put("JDIST_JOB_TOKEN", "mpi-fault-it-" + System.nanoTime());
            env.put("JDIST_HEARTBEAT", "2s");
        } else {
            env.put("JDIST_TIMEOUT", DEADLINE_SECONDS + "s");
        }
        Path logDir = Path.of("target", "mpi-it");
        Files.createDirectories(logDir);
        Path log = logDir.resolve("fault-" + impl + "-" + stopped + "-" + op + "-" + detector + ".log");
        pb.redirectErrorStream(true).redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));

        Process p = pb.start();
        List<Long> rankPids = new ArrayList<>();
        long stoppedAt = -1;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT_SECONDS);
        boolean done = false;
        try {
            while (System.nanoTime() < deadline) {
                String out = Files.readString(log, StandardCharsets.UTF_8);
                if (stoppedAt < 0 && out.contains("STOPPING " + stopped)) stoppedAt = System.nanoTime();
                if (p.waitFor(200, TimeUnit.MILLISECONDS)) {
                    done = true;
                    break;
                }
            }
            long ended = System.nanoTime();
            String out = Files.readString(log, StandardCharsets.UTF_8);
            Matcher m = Pattern.compile("PID (\\d+) (\\d+)").matcher(out);
            while (m.find()) rankPids.add(Long.parseLong(m.group(2)));
            String shown = out.length() > 8000 ? out.substring(out.length() - 8000) : out;
            assertThat(done).as("%s did not end within %d s:\n%s", String.join(" ", cmd), LIMIT_SECONDS, shown).isTrue();
            assertThat(rankPids).as("every rank started:\n%s", shown).hasSize(3);
            assertThat(stoppedAt).as("rank %d stopped itself:\n%s", stopped, shown).isPositive();
            double seconds = (ended - stoppedAt) / 1e9;
            System.out.printf("[MpiFaultIT] %s, rank %d stopped, %s, %s: job ended %.1f s after the stop, exit status %d%n",
                    impl, stopped, op, detector, seconds, p.exitValue());
            assertThat(out).as("no operation returned:\n%s", shown).doesNotContain("RETURNED");
            if (watch) {
                assertThat(out).as("the watch's typed error on stderr:\n%s", shown)
                        .contains("dev.jdist.PeerUnresponsiveException: ").contains("rank " + stopped + " ")
                        .contains("its process is stopped").contains("MPI_Abort");
                // the watch's bound (8 of 10 intervals of silence: 1.6 s), not the 120 s deadline of a group without it
                assertThat(seconds).as("seconds from the stop to the end of the job").isLessThan(60);
            } else {
                assertThat(out).as("the typed error on stderr:\n%s", shown)
                        .contains("dev.jdist.DeadlineExceededException: mpi rank ")
                        .contains("did not complete within " + DEADLINE_SECONDS + " s (JDIST_TIMEOUT")
                        .contains("MPI_Abort");
                assertThat(out).contains(switch (op) {
                    case "all_sum" -> "all_sum float32[1024] (MPI_Iallreduce)";
                    case "all_gather" -> "all_gather int32[7] (MPI_Iallgather)";
                    case "sum_scatter" -> "sum_scatter float64[15] (MPI_Ireduce_scatter_block)";
                    case "recv" -> "recv float32[16] from rank " + stopped + " (MPI_Irecv)";
                    default -> "close (MPI_Ibarrier before MPI_Finalize)";
                });
            }
            assertThat(p.exitValue()).as("exit status:\n%s", shown).isNotZero();
            // Deadline, then the launcher's teardown: well under a minute, never "forever".
            assertThat(seconds).as("seconds from the stop to the end of the job").isLessThan(DEADLINE_SECONDS + 55);
            for (long pid : rankPids) {
                boolean gone = false;
                for (int i = 0; i < 100 && !gone; i++) {
                    gone = ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true);
                    if (!gone) Thread.sleep(100);
                }
                assertThat(gone).as("rank process %d is gone", pid).isTrue();
            }
        } finally {
            if (!done) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
            for (long pid : rankPids) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }
}
