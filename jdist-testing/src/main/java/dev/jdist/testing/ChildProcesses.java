package dev.jdist.testing;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Processes a test starts and ends: child JVMs ({@link JavaCommand}), launchers such as {@code mpirun}. Each gets the
 * test's environment without the variables that configure jdist or describe a job ({@link #isJobVariable}) — only
 * what the test passes — stdin at EOF, and stdout and stderr together in one file per process. Every wait is bounded;
 * {@link #close()} kills, by pid, whatever of these processes (and their children) still runs.
 */
public class ChildProcesses implements AutoCloseable {
    private static final List<String> JOB_PREFIXES = List.of("MLX_", "JDIST_", "NCCL_", "JACCL_", "OMPI_", "PMI_", "PMIX_",
            "SLURM_", "PET_");
    private static final Set<String> JOB_NAMES = Set.of("MPI_LIBNAME", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "MASTER_ADDR", "MASTER_PORT", "JOB_COMPLETION_INDEX");

    private final List<Process> processes = new ArrayList<>();
    private final List<Path> outputs = new ArrayList<>();

    /**
     * Whether a variable of the test's own environment would configure jdist or make a child find another job than the
     * one the test describes (MLX's, jdist's, NCCL's, the MPI launchers', Slurm's, torchrun's and Kubernetes' variables).
     */
    public static boolean isJobVariable(String name) {
        return JOB_NAMES.contains(name) || JOB_PREFIXES.stream().anyMatch(name::startsWith);
    }

    /** Starts {@code command} with {@code env} added; its output goes to {@code dir/<name>-*.log}. Index = start order. */
    public Process start(Path dir, String name, List<String> command, Map<String, String> env) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().keySet().removeIf(ChildProcesses::isJobVariable);
        pb.environment().putAll(env);
        Files.createDirectories(dir);
        Path out = Files.createTempFile(dir, name + "-", ".log");
        pb.redirectErrorStream(true).redirectOutput(out.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        processes.add(p);
        outputs.add(out);
        return p;
    }

    /** How many processes were started. */
    public int size() {
        return processes.size();
    }

    /** The i-th process started. */
    public Process process(int i) {
        return processes.get(i);
    }

    public List<Process> processes() {
        return List.copyOf(processes);
    }

    /** Waits for process i; its exit code, or -1 (after killing it and its children) when it did not end in time. */
    public int await(int i, long seconds) throws InterruptedException {
        Process p = processes.get(i);
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }

    /** Process i's output so far (stdout and stderr). */
    public String output(int i) {
        try {
            return Files.readString(outputs.get(i));
        } catch (IOException e) {
            return "<cannot read " + outputs.get(i) + ": " + e + ">";
        }
    }

    /** Every process's output, each under a header, for assertion messages. */
    public String allOutputs() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < outputs.size(); i++) {
            sb.append("---- process ").append(i).append(":\n").append(output(i)).append('\n');
        }
        return sb.toString();
    }

    /** Waits (at most {@code seconds}) until process i has printed {@code text}; fails if it ends before. */
    public void awaitOutput(int i, String text, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!output(i).contains(text)) {
            if (System.nanoTime() > deadline || !processes.get(i).isAlive()) {
                throw new AssertionError("process " + i + " never printed \"" + text + "\":\n" + allOutputs());
            }
            Thread.sleep(100);
        }
    }

    /** Kills what still runs and waits (at most 10 s each) for it to end; an interrupt stops the waiting, not the killing. */
    @Override
    public void close() {
        boolean interrupted = false;
        for (Process p : processes) {
            if (p.isAlive()) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                try {
                    if (!interrupted) p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }
}
