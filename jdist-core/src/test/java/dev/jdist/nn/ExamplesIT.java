package dev.jdist.nn;

import dev.jdist.testing.LongTest;
import dev.jdist.spi.Backend;
import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JavaCommand;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.stream.IntStream;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Runs the example programs as real JVMs: 1 rank (no configuration: the singleton group), and 2 and
 * 4 ranks over the TCP ring on 127.0.0.1 (MLX_RANK + MLX_HOSTFILE, free ports), and checks what
 * the issue promises: identical weights on every rank, the loss of the 1-process run, the sharded
 * output equal to the unsharded one, the expert-parallel output equal to the single-process one.
 */
@Timeout(600)
class ExamplesIT {
    /** Data parallelism changes only the summation order: the final loss must match the 1-process run this closely (relative). */
    static final double LOSS_TOLERANCE = 1e-3;
    /** Sharded vs unsharded MLP output, max |difference| (float32 rounding is ~1e-7 here). */
    static final double OUTPUT_TOLERANCE = 1e-5;
    static final long RANK_TIMEOUT_S = 240;

    static Path examples;
    static String classpath;
    @TempDir static Path tmp;
    static Path classes;
    static final Map<String, List<RankRun>> SINGLE = new ConcurrentHashMap<>();

    record RankRun(int rank, int exit, String out, String err) {}

    @BeforeAll
    static void compileExamples() throws IOException {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("examples/AllSum.java"))) dir = dir.getParent();
        assertThat(dir).as("the repository root (holding examples/AllSum.java) above " + System.getProperty("user.dir")).isNotNull();
        examples = dir.resolve("examples");
        classpath = JavaCommand.classPath();
        classes = Files.createDirectories(tmp.resolve("classes"));
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int rc = ToolProvider.getSystemJavaCompiler().run(null, diagnostics, diagnostics,
                "-cp", classpath, "-d", classes.toString(),
                examples.resolve("AllSum.java").toString(), examples.resolve("DataParallel.java").toString(),
                examples.resolve("TensorParallel.java").toString(), examples.resolve("MixtureOfExperts.java").toString());
        assertThat(rc).as("javac of the examples: " + diagnostics.toString(StandardCharsets.UTF_8)).isZero();
    }

    static void requireRing() {
        boolean ring = ServiceLoader.load(Backend.class).stream().anyMatch(p -> p.get().name().equals("ring"));
        assertThat(ring).as("the ring backend is registered (META-INF/services/dev.jdist.spi.Backend)").isTrue();
    }

    // ------------------------------------------------------------------ DataParallel

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 4})
    void dataParallelEndsWithIdenticalWeightsAndTheLossOfTheOneProcessRun(int n) throws Exception {
        checkDataParallelEndsWithIdenticalWeightsAndTheLossOfTheOneProcessRun(n);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2})
    void dataParallelEndsWithIdenticalWeightsAndTheLossOfTheOneProcessRunTwoRanks(int n) throws Exception {
        checkDataParallelEndsWithIdenticalWeightsAndTheLossOfTheOneProcessRun(n);
    }

    private void checkDataParallelEndsWithIdenticalWeightsAndTheLossOfTheOneProcessRun(int n) throws Exception {
        List<RankRun> runs = run("DataParallel", n);
        Set<String> checksums = new HashSet<>();
        for (RankRun r : runs) {
            Matcher m = find(r, "rank (\\d+) of (\\d+): weights crc32=([0-9a-f]{8})");
            assertThat(Integer.parseInt(m.group(1))).isEqualTo(r.rank());
            assertThat(Integer.parseInt(m.group(2))).isEqualTo(n);
            checksums.add(m.group(3));
        }
        assertThat(checksums).as("weight checksums of the %d ranks", n).hasSize(1);
        assertThat(runs.getFirst().out()).contains("weights identical on all " + n + " ranks");

        double[] loss = loss(runs.getFirst());
        assertThat(loss[0]).as("final loss").isLessThan(0.1 * loss[1]);   // training works: the loss falls > 10x
        double[] single = loss(SINGLE.computeIfAbsent("DataParallel", k -> run(k, 1)).getFirst());
        assertThat(loss[1]).as("initial loss vs the 1-process run").isCloseTo(single[1], org.assertj.core.data.Percentage.withPercentage(1e-4));
        assertThat(Math.abs(loss[0] - single[0])).as("final loss %s vs the 1-process run's %s", loss[0], single[0])
                .isLessThanOrEqualTo(LOSS_TOLERANCE * single[0]);
    }

    private static double[] loss(RankRun rank0) {
        Matcher m = find(rank0, "loss ([0-9.]+) after (\\d+) iterations \\(initial ([0-9.]+)\\); (\\d+) ranks x (\\d+) examples");
        return new double[] {Double.parseDouble(m.group(1)), Double.parseDouble(m.group(3))};
    }

    // ------------------------------------------------------------------ TensorParallel

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 4})
    void tensorParallelOutputEqualsTheUnshardedOutputOnEveryRank(int n) throws Exception {
        checkTensorParallelOutputEqualsTheUnshardedOutputOnEveryRank(n);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2})
    void tensorParallelOutputEqualsTheUnshardedOutputOnEveryRankTwoRanks(int n) throws Exception {
        checkTensorParallelOutputEqualsTheUnshardedOutputOnEveryRank(n);
    }

    private void checkTensorParallelOutputEqualsTheUnshardedOutputOnEveryRank(int n) throws Exception {
        List<RankRun> runs = run("TensorParallel", n);
        for (RankRun r : runs) {
            Matcher m = find(r, "rank (\\d+) of (\\d+): max \\|y - expected\\| = (\\S+)");
            assertThat(Integer.parseInt(m.group(2))).isEqualTo(n);
            assertThat(Double.parseDouble(m.group(3))).as("rank %d's max error", r.rank()).isLessThanOrEqualTo(OUTPUT_TOLERANCE);
        }
        Matcher m = find(runs.getFirst(), "sum\\(y\\) = (\\S+) over 8 x 256 outputs; (\\d+) ranks x (\\d+) hidden features");
        assertThat(Integer.parseInt(m.group(3))).isEqualTo(1024 / n);
        Matcher s = find(SINGLE.computeIfAbsent("TensorParallel", k -> run(k, 1)).getFirst(), "sum\\(y\\) = (\\S+)");
        assertThat(Double.parseDouble(m.group(1))).as("sum of the outputs vs the 1-process run")
                .isCloseTo(Double.parseDouble(s.group(1)), org.assertj.core.data.Offset.offset(1e-3));
    }

    // ------------------------------------------------------------------ MixtureOfExperts

    /** all_to_all needs ranks known to be jdist (docs/reference/collectives.md §13): a job token, as jdist launch sets. */
    static final Map<String, String> JOB_TOKEN = Map.of("JDIST_JOB_TOKEN", "examples-it");

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 4})
    void mixtureOfExpertsOutputEqualsTheSingleProcessOutputOnEveryRank(int n) throws Exception {
        checkMixtureOfExpertsOutputEqualsTheSingleProcessOutputOnEveryRank(n);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2})
    void mixtureOfExpertsOutputEqualsTheSingleProcessOutputOnEveryRankTwoRanks(int n) throws Exception {
        checkMixtureOfExpertsOutputEqualsTheSingleProcessOutputOnEveryRank(n);
    }

    private void checkMixtureOfExpertsOutputEqualsTheSingleProcessOutputOnEveryRank(int n) throws Exception {
        List<RankRun> runs = run("MixtureOfExperts", n, JOB_TOKEN);
        for (RankRun r : runs) {
            Matcher m = find(r, "rank (\\d+) of (\\d+): experts (\\d+)-(\\d+), (\\d+) of 96 tokens to other ranks, "
                    + "max \\|y - single process\\| = (\\S+)");
            assertThat(Integer.parseInt(m.group(1))).isEqualTo(r.rank());
            assertThat(Integer.parseInt(m.group(2))).isEqualTo(n);
            assertThat(Integer.parseInt(m.group(3))).as("rank %d's first expert", r.rank()).isEqualTo(r.rank() * 8 / n);
            if (n > 1) assertThat(Integer.parseInt(m.group(5))).as("rank %d sends tokens away", r.rank()).isPositive();
            assertThat(Double.parseDouble(m.group(6))).as("rank %d's max error", r.rank()).isLessThanOrEqualTo(OUTPUT_TOLERANCE);
        }
        Matcher m = find(runs.getFirst(), "tokens per expert over all ranks: \\[([0-9, ]+)\\]; (\\d+) ranks x 96 tokens");
        int total = java.util.Arrays.stream(m.group(1).split(", ")).mapToInt(Integer::parseInt).sum();
        assertThat(total).as("every token reached one expert").isEqualTo(96 * n);
        assertThat(runs.getFirst().out()).contains("expert-parallel output equals the single-process output on all " + n + " ranks");
    }

    @Test
    void mixtureOfExpertsSaysWhichRankCountsItNeeds() throws Exception {
        requireRing();
        Path hostfile = tmp.resolve("hosts-moe-3.json");
        Files.writeString(hostfile, IntStream.of(FreePorts.distinct(3)).mapToObj(p -> "[\"127.0.0.1:" + p + "\"]")
                .collect(Collectors.joining(", ", "[", "]")));
        List<Started> started = new ArrayList<>();
        try {
            for (int r = 0; r < 3; r++) {
                started.add(start(List.of("-cp", classes + java.io.File.pathSeparator + classpath, "MixtureOfExperts"),
                        Map.of("MLX_RANK", String.valueOf(r), "MLX_HOSTFILE", hostfile.toString(), "JDIST_JOB_TOKEN", "examples-it"), r));
            }
            for (Started s : started) {
                RankRun r = s.await();
                assertThat(r.exit()).as(r.err()).isEqualTo(2);
                assertThat(r.err()).contains("8 experts do not divide among 3 ranks; run with a rank count that divides 8");
            }
        } finally {
            for (Started s : started) s.kill();
        }
    }

    // ------------------------------------------------------------------ AllSum

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 4})
    void allSumPrintsTheGroupSizeOnEveryRank(int n) throws Exception {
        checkAllSumPrintsTheGroupSizeOnEveryRank(n);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2})
    void allSumPrintsTheGroupSizeOnEveryRankTwoRanks(int n) throws Exception {
        checkAllSumPrintsTheGroupSizeOnEveryRank(n);
    }

    private void checkAllSumPrintsTheGroupSizeOnEveryRank(int n) throws Exception {
        for (RankRun r : run("AllSum", n)) {
            assertThat(r.out().strip()).isEqualTo(r.rank() + " array([" + n + ", " + n + ", " + n + ", ..., " + n + ", " + n + ", "
                    + n + "], dtype=float32)");
        }
    }

    @Test
    void examplesRunInSourceFileMode() throws Exception {
        RankRun r = start(List.of("java", examples.resolve("TensorParallel.java").toString()), Map.of(), 0).await();
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("rank 0 of 1: max |y - expected|");
    }

    // ------------------------------------------------------------------ running ranks

    /** Runs {@code mainClass} as {@code n} ranks; asserts every rank exits 0. */
    static List<RankRun> run(String mainClass, int n) {
        return run(mainClass, n, Map.of());
    }

    /** Runs {@code mainClass} as {@code n} ranks with {@code extraEnv}; asserts every rank exits 0. */
    static List<RankRun> run(String mainClass, int n, Map<String, String> extraEnv) {
        if (n > 1) requireRing();
        try {
            Map<Integer, Map<String, String>> envs = new HashMap<>();
            if (n == 1) {
                envs.put(0, extraEnv);
            } else {
                Path hostfile = tmp.resolve("hosts-" + mainClass + "-" + n + "-" + System.nanoTime() + ".json");
                Files.writeString(hostfile, IntStream.of(FreePorts.distinct(n)).mapToObj(p -> "[\"127.0.0.1:" + p + "\"]")
                        .collect(Collectors.joining(", ", "[", "]")));
                for (int r = 0; r < n; r++) {
                    Map<String, String> env = new HashMap<>(extraEnv);
                    env.put("MLX_RANK", String.valueOf(r));
                    env.put("MLX_HOSTFILE", hostfile.toString());
                    envs.put(r, env);
                }
            }
            List<Started> started = new ArrayList<>();
            try {
                for (int r = 0; r < n; r++) started.add(start(List.of("-cp", classes + java.io.File.pathSeparator + classpath, mainClass), envs.get(r), r));
                List<RankRun> runs = new ArrayList<>();
                for (Started s : started) runs.add(s.await());
                for (RankRun r : runs) {
                    assertThat(r.exit()).as("%s rank %d of %d exit status; stdout:%n%s%nstderr:%n%s", mainClass, r.rank(), n, r.out(), r.err())
                            .isZero();
                }
                return runs;
            } finally {
                for (Started s : started) s.kill();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A started rank process whose output is collected on two threads. */
    record Started(int rank, Process process, ByteArrayOutputStream out, ByteArrayOutputStream err, Thread[] pumps) {
        RankRun await() {
            try {
                if (!process.waitFor(RANK_TIMEOUT_S, TimeUnit.SECONDS)) {
                    kill();
                    fail("rank " + rank + " did not finish within " + RANK_TIMEOUT_S + " s; stdout: " + out + " stderr: " + err);
                }
                for (Thread t : pumps) t.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                kill();
                throw new IllegalStateException(e);
            }
            return new RankRun(rank, process.exitValue(), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        }

        void kill() {
            if (process.isAlive()) process.destroyForcibly();
        }
    }

    static Started start(List<String> args, Map<String, String> env, int rank) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(JavaCommand.java());
        // No jdist flags: the examples run as any plain `java -cp` program does (portable kernels, no native access).
        cmd.add("-XX:+UseSerialGC");
        if (args.getFirst().equals("java")) {
            cmd.add("-cp");
            cmd.add(classpath);
            cmd.addAll(args.subList(1, args.size()));
        } else {
            cmd.addAll(args);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().keySet().removeIf(ChildProcesses::isJobVariable);
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread[] pumps = {pump(p.getInputStream(), out), pump(p.getErrorStream(), err)};
        return new Started(rank, p, out, err, pumps);
    }

    private static Thread pump(InputStream in, ByteArrayOutputStream sink) {
        return Thread.ofPlatform().daemon().start(() -> {
            try (in) {
                in.transferTo(sink);
            } catch (IOException ignored) {
                // the process ended
            }
        });
    }

    static Matcher find(RankRun r, String regex) {
        Matcher m = Pattern.compile(regex).matcher(r.out());
        if (!m.find()) fail("rank " + r.rank() + " printed no line matching /" + regex + "/; stdout:\n" + r.out() + "\nstderr:\n" + r.err());
        return m;
    }
}
