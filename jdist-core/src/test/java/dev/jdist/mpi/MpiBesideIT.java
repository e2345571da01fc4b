package dev.jdist.mpi;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.JavaCommand;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Plain {@code mpirun.openmpi}, no job token: a rank that never meets the others beside the group (it stands for an MLX
 * rank of the job: started with {@code JDIST_JOB_SOURCE=none}, so it looks for no rendezvous) leaves the group as it
 * was before, with no table and no watch, on every rank alike; the job still runs and ends normally. The wait is
 * shortened to 3 s with {@code JDIST_RENDEZVOUS_TIMEOUT} (10 s by default). (All ranks
 * jdist: {@code MpiFaultIT}'s "plain" row, where the watch finds a stopped rank.)
 */
class MpiBesideIT {
    private static final long LIMIT_SECONDS = 180;

    @Test
    @Timeout(value = LIMIT_SECONDS + 60, unit = TimeUnit.SECONDS)
    void aRankThatDoesNotMeetBesideTheGroupLeavesEveryRankWithoutTheWatchAndTheJobRuns() throws Exception {
        var launcher = Requirements.findExecutable("mpirun.openmpi");
        Requirements.require(launcher.isPresent(), "mpirun.openmpi is not installed (Debian: openmpi-bin libopenmpi-dev)");
        var lib = Requirements.findLibrary("libmpi.so.40");
        Requirements.require(lib.isPresent(), "the openmpi library is not installed");
        List<String> program = JavaCommand.of(List.of("-Xmx128m"), MpiBesideProgram.class);
        List<String> cmd = new ArrayList<>(List.of(launcher.get().toString(), "--allow-run-as-root", "--oversubscribe",
                "--mca", "btl_vader_single_copy_mechanism", "none", "-n", "2"));
        cmd.addAll(program);
        cmd.addAll(List.of(":", "-n", "1", "env", "JDIST_JOB_SOURCE=none"));
        cmd.addAll(program);
        try (ChildProcesses job = new ChildProcesses()) {
            // the side channel waits min(10 s, JDIST_RENDEZVOUS_TIMEOUT): 3 s keeps the test short
            job.start(Path.of("target", "mpi-it"), "beside", cmd, Map.of("MLX_MPI_LIBNAME", lib.get().toString(),
                    "JDIST_RENDEZVOUS_TIMEOUT", "3s"));
            int exit = job.await(0, LIMIT_SECONDS);
            String out = job.output(0);
            assertThat(exit).as("exit status of %s:%n%s", String.join(" ", cmd), out).isZero();
            for (int r = 0; r < 3; r++) {
                assertThat(out).as("rank %d", r).contains("TABLE " + r + " no").contains("OK " + r);
            }
            // the ranks that waited say why, once each; nothing failed
            assertThat(out).contains("jdist: rank 0: this MPI job runs without the liveness watch")
                    .contains("the ranks did not all meet beside the group at 127.0.0.1:").contains(" within 3.0 s (an MLX rank")
                    .contains("rank 2: never connected").doesNotContain("Exception in thread");
        }
    }
}
