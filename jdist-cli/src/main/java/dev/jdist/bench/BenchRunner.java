package dev.jdist.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.console.CliFailure;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Runs a sweep as a real job: {@code jdist launch} (in a child JVM, so the launcher owns and
 * cleans up the ranks exactly as for any user job) starts {@link BenchWorker} on every rank;
 * rank 0's {@code JDIST-BENCH} lines come back through the launcher's output.
 */
public final class BenchRunner {
    private static final ObjectMapper JSON = new ObjectMapper();

    private BenchRunner() {}

    /**
     * @param launchOptions options for {@code jdist launch} (hosts, -n, backend, ...), without the command
     * @param spec          the sweep
     * @param onRow         called for each result as it arrives (progress display)
     * @param passThrough   where every other line of the job's output goes
     * @throws CliFailure with the job's exit status when the job fails
     */
    public static List<BenchResult> run(List<String> launchOptions, BenchWorker.Spec spec, Consumer<BenchResult> onRow,
                                        PrintStream passThrough) throws IOException, InterruptedException {
        String classPath = System.getProperty("java.class.path");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules=jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-cp", classPath, "dev.jdist.cli.JdistCommand", "launch"));
        cmd.addAll(launchOptions);
        cmd.addAll(List.of("--class-path", classPath, "--", BenchWorker.class.getName(), JSON.writeValueAsString(spec)));

        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.INHERIT).start();
        List<BenchResult> results = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                int at = line.indexOf(BenchWorker.LINE_PREFIX);
                if (at >= 0) {
                    BenchResult row = JSON.readValue(line.substring(at + BenchWorker.LINE_PREFIX.length()), BenchResult.class);
                    results.add(row);
                    onRow.accept(row);
                } else {
                    passThrough.println(line);
                }
            }
        } finally {
            if (p.isAlive()) p.destroy();
        }
        int status = p.waitFor();
        if (status != 0) {
            throw CliFailure.of(status, "the benchmark job failed (jdist launch exited " + status + "); its output is above");
        }
        return results;
    }
}
