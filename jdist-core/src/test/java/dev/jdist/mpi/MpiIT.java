package dev.jdist.mpi;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.JavaCommand;
import dev.jdist.testing.LongTest;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link MpiCheckProgram} under Debian's {@code mpirun.openmpi} and {@code mpirun.mpich} with 2–4
 * ranks: every op, every dtype, split, send/recv between every pair, MPI error text, and the operations MLX
 * lacks through {@code CollectiveChecks} on the world and on a split; with library
 * discovery by launcher family, with {@code MLX_MPI_LIBNAME} set to the real file, with backend
 * {@code "any"}, and with every call chunked (the path for counts above 2^31−1).
 */
class MpiIT {
    private static final long LIMIT_SECONDS = 420;
    /** Not an argument of MpiCheckProgram: this test keeps every CPU busy while the job runs. */
    private static final String LOAD = "cpu-load";

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("openmpi", 2, "discover", List.of()),
                Arguments.of("openmpi", 3, "MLX_MPI_LIBNAME", List.of("chunk=777")),
                Arguments.of("openmpi", 4, "discover", List.of("any")),
                Arguments.of("mpich", 2, "discover", List.of()),
                Arguments.of("mpich", 3, "MLX_MPI_LIBNAME", List.of("chunk=777")));
    }

    /**
     * Issue 15: wrong values were once seen under heavy load; the same checks with every core busy and a GC every 20 ms
     * in every rank. A soak that keeps the machine busy for minutes, so it runs in the long tier.
     */
    static Stream<Arguments> casesUnderLoad() {
        return Stream.of(
                Arguments.of("openmpi", 3, "MLX_MPI_LIBNAME", List.of("chunk=777", "gc", LOAD)),
                Arguments.of("mpich", 3, "discover", List.of("gc", LOAD)));
    }

    @ParameterizedTest(name = "{0} with {1} ranks, library by {2}, {3}")
    @MethodSource("cases")
    @Timeout(value = LIMIT_SECONDS + 60, unit = TimeUnit.SECONDS)
    void everyOpDtypeAndSplitAgreesOnEveryRank(String impl, int ranks, String libraryBy, List<String> extra)
            throws IOException, InterruptedException {
        check(impl, ranks, libraryBy, extra);
    }

    @LongTest
    @ParameterizedTest(name = "{0} with {1} ranks, library by {2}, {3}")
    @MethodSource("casesUnderLoad")
    @Timeout(value = LIMIT_SECONDS + 60, unit = TimeUnit.SECONDS)
    void everyOpDtypeAndSplitAgreesOnEveryRankUnderLoad(String impl, int ranks, String libraryBy, List<String> extra)
            throws IOException, InterruptedException {
        check(impl, ranks, libraryBy, extra);
    }

    private static void check(String impl, int ranks, String libraryBy, List<String> extra)
            throws IOException, InterruptedException {
        boolean openMpi = impl.equals("openmpi");
        String launcherName = openMpi ? "mpirun.openmpi" : "mpirun.mpich";
        String libName = openMpi ? "libmpi.so.40" : "libmpich.so.12";
        var launcher = Requirements.findExecutable(launcherName);
        Requirements.require(launcher.isPresent(), launcherName + " is not installed (Debian: "
                + (openMpi ? "openmpi-bin libopenmpi-dev" : "mpich libmpich-dev") + "; bin/test installs it when run as root)");
        var lib = Requirements.findLibrary(libName);
        Requirements.require(lib.isPresent(), libName + " is not installed (bin/test installs it when run as root)");

        List<String> cmd = new ArrayList<>();
        cmd.add(launcher.get().toString());
        if (openMpi) {
            cmd.addAll(List.of("--allow-run-as-root", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"));
        }
        cmd.addAll(List.of("-n", Integer.toString(ranks)));
        // jdist's flags: libmpi is bound with java.lang.foreign
        cmd.addAll(JavaCommand.of(List.of("-Xmx256m"), MpiCheckProgram.class, Integer.toString(ranks)));
        cmd.addAll(extra.stream().filter(a -> !a.equals(LOAD)).toList());

        Map<String, String> env = libraryBy.equals("MLX_MPI_LIBNAME")
                ? Map.of("MLX_MPI_LIBNAME", lib.get().toString()) : Map.of();
        List<Process> load = extra.contains(LOAD) ? startCpuLoad() : List.of();
        try (ChildProcesses job = new ChildProcesses()) {
            job.start(Path.of("target", "mpi-it"), impl + "-" + ranks + "-" + String.join("-", extra), cmd, env);
            int exit;
            try {
                exit = job.await(0, LIMIT_SECONDS);
            } finally {
                // the busy shells first: SIGKILL to `timeout` alone would leave its child spinning, orphaned
                for (Process l : load) {
                    l.descendants().forEach(ProcessHandle::destroyForcibly);
                    l.destroyForcibly();
                }
                for (Process l : load) l.waitFor(10, TimeUnit.SECONDS);
            }
            String out = job.output(0);
            String shown = out.length() > 6000 ? out.substring(out.length() - 6000) : out;
            assertThat(exit).as("%s did not finish within %d s:\n%s", String.join(" ", cmd), LIMIT_SECONDS, shown)
                    .isNotEqualTo(-1);
            assertThat(exit).as("exit status of %s:\n%s", String.join(" ", cmd), shown).isZero();
            for (int r = 0; r < ranks; r++) {
                assertThat(out).as("rank %d reported success", r).contains("MPI-CHECK OK rank " + r + " of " + ranks);
            }
            assertThat(out).contains(openMpi ? "Open MPI" : "MPICH");
        }
    }

    /** One busy process per CPU, each ended by {@code timeout} after the test's limit at the latest. */
    private static List<Process> startCpuLoad() throws IOException {
        List<Process> load = new ArrayList<>();
        for (int i = 0; i < Runtime.getRuntime().availableProcessors(); i++) {
            load.add(new ProcessBuilder("timeout", Long.toString(LIMIT_SECONDS + 30), "sh", "-c", "while :; do :; done")
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
        }
        return load;
    }
}
