package dev.jdist.testing;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Runs the real {@code jdist} command (the shaded jar that {@code mvn package} built) in a child JVM, as a user would,
 * bounded in time; and the helpers the launch integration tests use to watch the processes it starts.
 */
public final class JdistCli {
    /** The jar integration tests run: failsafe runs after {@code package}, so it exists. */
    public static final Path JAR = Path.of("target", "jdist.jar").toAbsolutePath();

    private JdistCli() {}

    /** The java that runs the tests, and so the jar. */
    public static String java() {
        return JavaCommand.java();
    }

    /** The repository root: the first folder above the working directory that holds {@code examples/AllSum.java}. */
    public static Path repoRoot() {
        return TestFiles.repoRoot();
    }

    /**
     * {@code java -jar jdist.jar ARGS} as a user runs it (the jar's manifest grants native access), started through
     * {@code env} so that the CLI's JVM and the Java ranks it starts get {@link JavaCommand#QUICK_START} (the ranks through
     * {@code JDIST_JAVA_OPTIONS}), and the CLI's JVM maps the jar's ahead-of-time class cache ({@link ChildAotCache}):
     * the integration tests start hundreds of short-lived JVMs on two cores, and these options change nothing they
     * compute. {@code env} execs java, so the process is still the CLI's.
     */
    public static List<String> argv(List<String> args) {
        if (!Files.isRegularFile(JAR)) {
            throw new IllegalStateException(JAR + " is missing: run the integration tests with `mvn verify` (package builds it)");
        }
        List<String> argv = new ArrayList<>(List.of("env", "JDIST_JAVA_OPTIONS=" + String.join(" ", JavaCommand.QUICK_START), java()));
        List<String> aot = ChildAotCache.forJar(JAR, JavaCommand.QUICK_START, List.of("launch", "-n", "2", "--", "true"));
        argv.addAll(ChildAotCache.withCache(JavaCommand.QUICK_START, aot));
        argv.addAll(List.of("-jar", JAR.toString()));
        argv.addAll(args);
        return argv;
    }

    /** {@code jdist ARGS} with {@code env} added to the test's environment, stdin at EOF. */
    public static CommandResult run(Duration timeout, Map<String, String> env, String... args) {
        return run(timeout, null, env, null, args);
    }

    /** {@code jdist ARGS} in {@code cwd} (null: the test's) with stdin text (null: EOF). */
    public static CommandResult run(Duration timeout, Path cwd, Map<String, String> env, String stdin, String... args) {
        return CommandResult.run(timeout, cwd, env, stdin, argv(Arrays.asList(args)));
    }

    /** {@code jdist launch ARGS} to completion. */
    public static CommandResult launch(Duration timeout, String... launchArgs) {
        return launch(timeout, Map.of(), null, null, launchArgs);
    }

    /** {@code jdist launch ARGS} to completion, with {@code env} added, stdin text (null: EOF) and {@code cwd} (null: the test's). */
    public static CommandResult launch(Duration timeout, Map<String, String> env, String stdin, Path cwd, String... launchArgs) {
        return CommandResult.run(timeout, cwd, env, stdin, argv(launchCommand(launchArgs)));
    }

    /**
     * Starts {@code jdist launch ARGS} with SIGINT reset to its default disposition (a test JVM may have inherited
     * SIGINT ignored, which a child keeps across exec); output goes to files {@code stdout} and {@code stderr} in
     * {@code dir}.
     */
    public static Process startLaunch(Path dir, Map<String, String> env, String... launchArgs) throws IOException {
        List<String> a = new ArrayList<>(List.of("perl", "-e", "$SIG{INT}='DEFAULT'; exec @ARGV or die \"exec: $!\""));
        a.addAll(argv(launchCommand(launchArgs)));
        ProcessBuilder pb = new ProcessBuilder(a);
        pb.environment().putAll(env);
        pb.redirectOutput(dir.resolve("stdout").toFile()).redirectError(dir.resolve("stderr").toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        return pb.start();
    }

    private static List<String> launchCommand(String... launchArgs) {
        List<String> a = new ArrayList<>(List.of("launch"));
        a.addAll(Arrays.asList(launchArgs));
        return a;
    }

    /** The file's text, or "" when it is missing or unreadable. */
    public static String read(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (IOException e) {
            return "";
        }
    }

    /** Polls {@code condition} every 100 ms for at most {@code timeout}. */
    public static boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(100);
        }
        return condition.getAsBoolean();
    }

    public static void signal(Process p, String sig) throws Exception {
        new ProcessBuilder("kill", "-s", sig, Long.toString(p.pid())).start().waitFor(10, TimeUnit.SECONDS);
    }

    /** Processes on this machine whose command line contains {@code marker}, leaving out the launcher itself. */
    public static List<String> processesWith(String marker) {
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses()
                .filter(h -> h.pid() != self)
                .filter(h -> h.info().commandLine().map(c -> c.contains(marker)).orElse(false))
                .map(h -> h.pid() + " " + h.info().commandLine().orElse(""))
                .filter(s -> !s.contains(" -e $SIG{INT}") && !s.contains("jdist.jar launch"))
                .toList();
    }

    /** A unique sleep duration that marks a test's processes, e.g. {@code 600.48213}. */
    public static String sleepMarker() {
        return "600." + (10000 + new Random().nextInt(89999));
    }

    /** Output lines with the pseudo-terminal's CR removed. */
    public static List<String> lines(String s) {
        return s.replace("\r", "").lines().toList();
    }
}
