package dev.jdist.ring;

import dev.jdist.BuildInfo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Starts ring ranks as separate JVMs, as a scheduler would: {@code MLX_RANK} and {@code MLX_HOSTFILE}
 * in the environment, the test class path, jdist's JVM flags ({@link BuildInfo#jvmFlags()}). Output goes to one file per rank.
 * {@link #close()} kills (by pid, only these processes) whatever is still running.
 */
final class RankProcesses implements AutoCloseable {
    final List<Process> processes = new ArrayList<>();
    final List<Path> outputs = new ArrayList<>();

    static String classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
    }

    /** Starts rank {@code rank} running {@code mainClass}. */
    Process start(Path dir, int rank, Path hostfile, Class<?> mainClass, Map<String, String> extraEnv, String... args)
            throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(BuildInfo.jvmFlags());    // what `jdist launch` gives Java ranks
        cmd.addAll(List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                "-cp", classPath(), mainClass.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove("JDIST_JOB_TOKEN");
        pb.environment().put("MLX_RANK", Integer.toString(rank));
        pb.environment().put("MLX_HOSTFILE", hostfile.toString());
        pb.environment().putAll(extraEnv);
        Path out = Files.createTempFile(dir, "rank" + rank + "-", ".log");
        pb.redirectErrorStream(true).redirectOutput(out.toFile());
        Process p = pb.start();
        processes.add(p);
        outputs.add(out);
        return p;
    }

    /** Waits for process i; returns its exit code, or -1 (after killing it) when it did not end in time. */
    int await(int i, long seconds) throws InterruptedException {
        Process p = processes.get(i);
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }

    String output(int i) {
        try {
            return Files.readString(outputs.get(i));
        } catch (IOException e) {
            return "<cannot read " + outputs.get(i) + ": " + e + ">";
        }
    }

    String allOutputs() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < outputs.size(); i++) sb.append("---- process ").append(i).append(":\n").append(output(i)).append('\n');
        return sb.toString();
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : processes) {
            if (p.isAlive()) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Waits (at most 180 s) until ranks 0..n-1 have printed "looping"; fails if one exits before. */
    void awaitLooping(int n) throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(180);
        for (int r = 0; r < n; r++) {
            while (!output(r).contains("looping")) {
                if (System.nanoTime() > deadline || !processes.get(r).isAlive()) {
                    throw new AssertionError("rank " + r + " never started looping:\n" + allOutputs());
                }
                Thread.sleep(100);
            }
        }
    }
}
