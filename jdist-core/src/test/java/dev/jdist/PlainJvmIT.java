package dev.jdist;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.JavaCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jdist in a JVM started with no options ({@code java -cp ... Main}, as a build tool, an IDE, mpirun
 * or srun would start it): the portable kernels run, the ring works, nothing prints a JVM warning, and
 * what needs native access says so in one line with the flag.
 */
@Timeout(120)
class PlainJvmIT {

    @Test
    void everythingRunsWithoutJvmFlagsAndWithoutWarnings() {
        CommandResult r = CommandResult.run(Duration.ofSeconds(100), null, Map.of(), null,
                JavaCommand.plain(PlainJvmProgram.class));
        String stdout = r.stdout(), stderr = r.stderr();
        assertThat(r.timedOut()).as("the program ended in time; stdout:%n%s", stdout).isFalse();
        assertThat(r.exitCode()).as("exit status; stdout:%n%s%nstderr:%n%s", stdout, stderr).isZero();
        assertThat(stderr).as("nothing on stderr: no JVM warning").isEmpty();
        assertThat(stdout).contains("vector module in the JVM: false")
                .contains("kernels: portable kernels (start java with " + String.join(" ", BuildInfo.vectorFlags()) + " for the Vector API ones)")
                .contains("reductions: every dtype and op ran")
                .contains("matmul: [1.0, 2.0, 3.0, 4.0]")
                .contains("ring all_sum: [3.0, 3.0]")
                .doesNotContain("WRONG");
        String mpi = stdout.lines().filter(l -> l.startsWith("mpi: ")).findFirst().orElseThrow();
        assertThat(mpi).isEqualTo("mpi: the mpi backend (libmpi) calls native code through java.lang.foreign, which this JVM "
                + "does not allow jdist: add " + String.join(" ", BuildInfo.jvmFlags()) + " to the java command (jdist launch adds it)");
        assertThat(List.of(stdout.split("\n"))).noneMatch(l -> l.startsWith("WARNING"));
    }
}
