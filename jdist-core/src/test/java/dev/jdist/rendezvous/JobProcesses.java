package dev.jdist.rendezvous;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Starts the ranks of a job as separate JVMs with the environment a scheduler would give them (no MLX variables
 * inherited from the test's own environment). Output goes to one file per process; {@link #close()} kills, by pid,
 * whatever of these processes still runs.
 */
final class JobProcesses implements AutoCloseable {
    /** Variables that would make the child find another job than the one the test describes. */
    static final List<String> CLEARED = List.of("MLX_RANK", "MLX_HOSTFILE", "MLX_WORLD_SIZE", "NCCL_HOST_IP", "NCCL_PORT",
            "MLX_JACCL_COORDINATOR", "JACCL_COORDINATOR", "MLX_IBV_DEVICES", "JDIST_JOB_TOKEN", "RANK", "WORLD_SIZE",
            "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "JDIST_RANK", "JDIST_WORLD_SIZE", "JDIST_MASTER_ADDR",
            "JDIST_MASTER_PORT", "JDIST_BACKEND", "JDIST_JOB_SOURCE", "JOB_COMPLETION_INDEX", "SLURM_JOB_ID", "SLURM_JOBID",
            "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE", "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "JDIST_TRANSPORT");

    final List<Process> processes = new ArrayList<>();
    final List<Path> outputs = new ArrayList<>();

    static String classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
    }

    /** The java command line that runs {@code mainClass} with jdist's flags. */
    static List<String> javaCommand(Class<?> mainClass) {
        return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Xmx256m",
                "-cp", classPath(), mainClass.getName());
    }

    Process start(Path dir, String name, List<String> command, Map<String, String> env) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command);
        CLEARED.forEach(pb.environment()::remove);
        pb.environment().putAll(env);
        Path out = Files.createTempFile(dir, name + "-", ".log");
        pb.redirectErrorStream(true).redirectOutput(out.toFile()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Process p = pb.start();
        processes.add(p);
        outputs.add(out);
        return p;
    }

    /** Waits for process i; its exit code, or -1 (after killing it and its children) when it did not end in time. */
    int await(int i, long seconds) throws InterruptedException {
        Process p = processes.get(i);
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
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
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
