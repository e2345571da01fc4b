package dev.jdist.mpi;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link MpiCheckMain} under Debian's {@code mpirun.openmpi} and {@code mpirun.mpich} with 2–4
 * ranks: every op, every dtype, split, send/recv between every pair, MPI error text, and the operations MLX
 * lacks through {@code CollectiveChecks} on the world and on a split; with library
 * discovery by launcher family, with {@code MLX_MPI_LIBNAME} set to the real file, with backend
 * {@code "any"}, and with every call chunked (the path for counts above 2^31−1).
 */
class MpiIT {
    private static final long LIMIT_SECONDS = 420;
    /** Not an argument of MpiCheckMain: this test keeps every CPU busy while the job runs. */
    private static final String LOAD = "cpu-load";

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("openmpi", 2, "discover", List.of()),
                Arguments.of("openmpi", 3, "MLX_MPI_LIBNAME", List.of("chunk=777")),
                Arguments.of("openmpi", 4, "discover", List.of("any")),
                Arguments.of("mpich", 2, "discover", List.of()),
                Arguments.of("mpich", 3, "MLX_MPI_LIBNAME", List.of("chunk=777")),
                // issue 15: wrong values were once seen under heavy load; the same checks with every core busy
                // and a GC every 20 ms in every rank.
                Arguments.of("openmpi", 3, "MLX_MPI_LIBNAME", List.of("chunk=777", "gc", LOAD)),
                Arguments.of("mpich", 3, "discover", List.of("gc", LOAD)));
    }

    @ParameterizedTest(name = "{0} with {1} ranks, library by {2}, {3}")
    @MethodSource("cases")
    @Timeout(value = LIMIT_SECONDS + 60, unit = TimeUnit.SECONDS)
    void everyOpDtypeAndSplitAgreesOnEveryRank(String impl, int ranks, String libraryBy, List<String> extra)
            throws IOException, InterruptedException {
        boolean openMpi = impl.equals("openmpi");
        String launcherName = openMpi ? "mpirun.openmpi" : "mpirun.mpich";
        String libName = openMpi ? "libmpi.so.40" : "libmpich.so.12";
        var launcher = MpiTestSupport.executable(launcherName);
        MpiTestSupport.require(launcher.isPresent(), launcherName + " is not installed (Debian: "
                + (openMpi ? "openmpi-bin libopenmpi-dev" : "mpich libmpich-dev") + ")");
        var lib = MpiTestSupport.library(libName);
        MpiTestSupport.require(lib.isPresent(), libName + " is not installed");

        List<String> cmd = new ArrayList<>();
        cmd.add(launcher.get().toString());
        if (openMpi) {
            cmd.addAll(List.of("--allow-run-as-root", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"));
        }
        cmd.addAll(List.of("-n", Integer.toString(ranks)));
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(dev.jdist.BuildInfo.jvmFlags());   // native access: libmpi is bound with java.lang.foreign
        cmd.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), MpiCheckMain.class.getName(), Integer.toString(ranks)));
        cmd.addAll(extra.stream().filter(a -> !a.equals(LOAD)).toList());

        ProcessBuilder pb = new ProcessBuilder(cmd);
        Map<String, String> env = pb.environment();
        for (String k : List.of("MLX_MPI_LIBNAME", "MPI_LIBNAME", "MLX_RANK", "MLX_HOSTFILE", "NCCL_HOST_IP",
                "MLX_JACCL_COORDINATOR", "JDIST_MPI_INIT")) {
            env.remove(k);
        }
        if (libraryBy.equals("MLX_MPI_LIBNAME")) env.put("MLX_MPI_LIBNAME", lib.get().toString());
        Path logDir = Path.of("target", "mpi-it");
        Files.createDirectories(logDir);
        Path log = logDir.resolve(impl + "-" + ranks + "-" + String.join("-", extra) + ".log");
        pb.redirectErrorStream(true).redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));

        List<Process> load = extra.contains(LOAD) ? startCpuLoad() : List.of();
        boolean done;
        Process p = pb.start();
        try {
            done = p.waitFor(LIMIT_SECONDS, TimeUnit.SECONDS);
            if (!done) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        } finally {
            for (Process l : load) l.destroyForcibly();
            for (Process l : load) l.waitFor(10, TimeUnit.SECONDS);
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        String shown = out.length() > 6000 ? out.substring(out.length() - 6000) : out;
        assertThat(done).as("%s did not finish within %d s:\n%s", String.join(" ", cmd), LIMIT_SECONDS, shown).isTrue();
        assertThat(p.exitValue()).as("exit status of %s:\n%s", String.join(" ", cmd), shown).isZero();
        for (int r = 0; r < ranks; r++) {
            assertThat(out).as("rank %d reported success", r).contains("MPI-CHECK OK rank " + r + " of " + ranks);
        }
        assertThat(out).contains(openMpi ? "Open MPI" : "MPICH");
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
