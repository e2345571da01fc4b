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
}
