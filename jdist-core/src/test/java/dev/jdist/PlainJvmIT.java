package dev.jdist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jdist in a JVM started with no options ({@code java -cp ... Main}, as a build tool, an IDE, mpirun
 * or srun would start it): the portable kernels run, the ring works, nothing prints a JVM warning, and
 * what needs native access says so in one line with the flag.
 */
@Timeout(120)
class PlainJvmIT {

    @Test
    void everythingRunsWithoutJvmFlagsAndWithoutWarnings(@TempDir Path dir) throws IOException, InterruptedException {
        String cp = System.getProperty("surefire.test.class.path");
        if (cp == null || cp.isBlank()) cp = System.getProperty("java.class.path");
        Path out = dir.resolve("stdout"), err = dir.resolve("stderr");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", cp, PlainJvmProgram.class.getName())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(100, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String stdout = Files.readString(out), stderr = Files.readString(err);
        assertThat(p.isAlive()).as("the program ended in time; stdout:%n%s", stdout).isFalse();
        assertThat(p.exitValue()).as("exit status; stdout:%n%s%nstderr:%n%s", stdout, stderr).isZero();
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
