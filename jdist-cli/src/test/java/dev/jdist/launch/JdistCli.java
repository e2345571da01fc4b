package dev.jdist.launch;

import dev.jdist.testing.CommandResult;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Runs the built CLI ({@code target/jdist.jar}) as a separate process, as a user would (integration tests). */
final class JdistCli {
    private JdistCli() {
    }

    static Path jar() {
        Path jar = Path.of("target", "jdist.jar").toAbsolutePath();
        if (!Files.exists(jar)) {
            throw new IllegalStateException(jar + " is missing: integration tests run after 'mvn package' (mvn verify)");
        }
        return jar;
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The repository root (the parent of jdist-cli). */
    static Path repoRoot() {
        return Path.of("").toAbsolutePath().getParent();
    }

    static List<String> argv(List<String> launchArgs) {
        List<String> a = new ArrayList<>(List.of(java(), "-jar", jar().toString(), "launch"));
        a.addAll(launchArgs);
        return a;
    }

    /** Runs {@code jdist launch ARGS} to completion (stdin text or /dev/null). */
    static CommandResult run(Duration timeout, Map<String, String> env, String stdin, Path cwd, String... launchArgs) {
        return CommandResult.run(timeout, cwd, env, stdin, argv(List.of(launchArgs)));
    }

    static CommandResult run(Duration timeout, String... launchArgs) {
        return run(timeout, Map.of(), null, null, launchArgs);
    }

    /**
     * Starts {@code jdist launch ARGS} with SIGINT reset to its default disposition (a test JVM may have inherited
     * SIGINT ignored, which a child keeps across exec); output goes to files in {@code dir}.
     */
    static Process start(Path dir, Map<String, String> env, String... launchArgs) throws IOException {
        List<String> a = new ArrayList<>(List.of("perl", "-e", "$SIG{INT}='DEFAULT'; exec @ARGV or die \"exec: $!\""));
        a.addAll(argv(List.of(launchArgs)));
        ProcessBuilder pb = new ProcessBuilder(a);
        pb.environment().putAll(env);
        pb.redirectOutput(dir.resolve("stdout").toFile()).redirectError(dir.resolve("stderr").toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        return pb.start();
    }

    static String read(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (IOException e) {
            return "";
        }
    }

    /** Polls {@code condition} every 100 ms for at most {@code timeout}. */
    static boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(100);
        }
        return condition.getAsBoolean();
    }

    static void signal(Process p, String sig) throws Exception {
        new ProcessBuilder("kill", "-s", sig, Long.toString(p.pid())).start().waitFor(10, TimeUnit.SECONDS);
    }

    /** Processes on this machine whose command line contains {@code marker}. */
    static List<String> processesWith(String marker) {
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses()
                .filter(h -> h.pid() != self)
                .filter(h -> h.info().commandLine().map(c -> c.contains(marker)).orElse(false))
                .map(h -> h.pid() + " " + h.info().commandLine().orElse(""))
                .filter(s -> !s.contains(" -e $SIG{INT}") && !s.contains("jdist.jar launch"))
                .toList();
    }

    /** A unique sleep duration that marks a test's processes, e.g. {@code 600.48213}. */
    static String sleepMarker() {
        return "600." + (10000 + new java.util.Random().nextInt(89999));
    }

    static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    /** Output lines with the pseudo-terminal's CR removed. */
    static List<String> lines(String s) {
        return s.replace("\r", "").lines().toList();
    }
}
