package dev.jdist.launch;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jdist launch --backend mpi} end to end with Debian's Open MPI: the launcher's {@code mpirun}
 * wrapper starts the ranks, and the library's mpi backend (found by backend "any", since the ring is not
 * configured under mpirun) forms the group. The program never closes its group: the backend's exit hook
 * finalizes MPI, so {@code mpirun} (and jdist) exit 0.
 */
@Timeout(600)
class MpiLaunchIT {

    @Test
    void allSumRunsOnTwoRanksUnderOpenMpisMpirun(@TempDir Path bin) throws IOException {
        Requirements.require(Requirements.file("/usr/bin/mpirun.openmpi"));
        Path root = JdistCli.repoRoot();
        assertThat(JdistCli.JAR).as("the shaded jar (built by the package phase)").exists();
        // The launcher uses the first `mpirun` on PATH; make that Open MPI's whatever the alternatives say.
        Files.createSymbolicLink(bin.resolve("mpirun"), Path.of("/usr/bin/mpirun.openmpi"));

        CommandResult r = JdistCli.run(Duration.ofSeconds(480), root,
                Map.of("PATH", bin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin")), null,
                "launch", "--backend", "mpi", "-n", "2", "--mpi-arg", "--allow-run-as-root --oversubscribe", "examples/AllSum.java");
        assertThat(r.timedOut()).as("launch timed out; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isFalse();
        assertThat(r.exitCode()).as("exit status; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
        assertThat(r.stdout()).contains("0 array([2, 2, 2, ..., 2, 2, 2], dtype=float32)")
                .contains("1 array([2, 2, 2, ..., 2, 2, 2], dtype=float32)");
    }

    /** {@code --timeout} bounds an mpi job as it does the others: mpirun and its ranks are ended, exit 124. */
    @Test
    void timeoutEndsMpirunAndItsRanks(@TempDir Path bin) throws Exception {
        Requirements.require(Requirements.file("/usr/bin/mpirun.openmpi"));
        Files.createSymbolicLink(bin.resolve("mpirun"), Path.of("/usr/bin/mpirun.openmpi"));
        String mark = "1187.5";   // the ranks: `sleep 1187.5`, told apart from any other process by it
        long start = System.nanoTime();
        CommandResult r = JdistCli.run(Duration.ofSeconds(120), JdistCli.repoRoot(),
                Map.of("PATH", bin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin")), null,
                "launch", "--backend", "mpi", "-n", "2", "--timeout", "3", "--mpi-arg", "--allow-run-as-root --oversubscribe",
                "--", "sleep", mark);
        double took = (System.nanoTime() - start) / 1e9;
        assertThat(r.timedOut()).as("launch did not end: %s", r).isFalse();
        assertThat(r.exitCode()).as("%s", r).isEqualTo(JobSupervisor.TIMEOUT_STATUS);
        assertThat(r.stderr()).as("%s", r).contains("job ran longer than --timeout 3 s; ending mpirun");
        assertThat(took).as("ended at the timeout plus mpirun's grace, not at the ranks' end").isLessThan(60);
        boolean gone = JdistCli.await(Duration.ofSeconds(15), () -> ProcessHandle.allProcesses()
                .noneMatch(ph -> ph.info().arguments().map(a -> a.length == 1 && a[0].equals(mark)).orElse(false)));
        ProcessHandle.allProcesses().filter(ph -> ph.info().arguments().map(a -> a.length == 1 && a[0].equals(mark)).orElse(false))
                .forEach(ProcessHandle::destroyForcibly);   // a failed check leaves nothing
        assertThat(gone).as("mpirun's ranks were left running").isTrue();
    }
}
