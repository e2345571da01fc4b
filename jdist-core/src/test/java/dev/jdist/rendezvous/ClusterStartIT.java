package dev.jdist.rendezvous;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JavaCommand;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The same unchanged program ({@link ClusterCheckProgram}: {@code Distributed.init()}, then values checked on every
 * rank) started as a 4-rank job the way cluster schedulers start it: torchrun-style variables, Kubeflow Trainer v2
 * variables, a Kubernetes Indexed Job's environment, Open MPI's {@code mpirun} used only to start processes. Every
 * rank is a separate JVM; the rendezvous runs over loopback.
 */
class ClusterStartIT {
    static final int N = 4;
    static final long LIMIT_SECONDS = 150;

    @TempDir
    Path dir;

    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        m.put("JDIST_TIMEOUT", "60");
        return m;
    }

    /** Starts N ranks with {@code envOf(rank)}; every one must print OK with the backend and source. */
    private void runsEverywhere(String source, IntFunction<Map<String, String>> envOf) throws Exception {
        try (ChildProcesses job = new ChildProcesses()) {
            for (int r = 0; r < N; r++) job.start(dir, "rank" + r, JavaCommand.of(ClusterCheckProgram.class), envOf.apply(r));
            for (int r = 0; r < N; r++) {
                assertThat(job.await(r, LIMIT_SECONDS)).as("exit code of process %d; outputs:%n%s", r, job.allOutputs()).isZero();
            }
            String all = job.allOutputs();
            for (int r = 0; r < N; r++) {
                assertThat(all).contains("rank " + r + " of " + N + ": OK (backend ring, source " + source + ")");
            }
        }
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void torchrunVariables() throws Exception {
        int port = FreePorts.one();
        runsEverywhere("torchrun", r -> env("RANK", "" + r, "WORLD_SIZE", "" + N, "LOCAL_RANK", "" + r, "LOCAL_WORLD_SIZE", "" + N,
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port));
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void kubeflowTrainerV2Variables() throws Exception {
        int port = FreePorts.one();
        // two "nodes" of two processes each, as a TrainJob with numNodes 2 and numProcPerNode 2
        runsEverywhere("trainer-v2", r -> env("PET_NNODES", "2", "PET_NPROC_PER_NODE", "2", "PET_NODE_RANK", "" + r / 2,
                "LOCAL_RANK", "" + r % 2, "PET_MASTER_ADDR", "localhost", "PET_MASTER_PORT", "" + port));
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void kubernetesIndexedJobEnvironment() throws Exception {
        int port = FreePorts.one();
        runsEverywhere("kubernetes", r -> env("JOB_COMPLETION_INDEX", "" + r, "JDIST_WORLD_SIZE", "" + N,
                "JDIST_MASTER_ADDR", "localhost", "JDIST_MASTER_PORT", "" + port));
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void openMpiMpirunStartsARingJob() throws Exception {
        Path mpirun = Path.of("/usr/bin/mpirun.openmpi");
        Requirements.require(Files.isExecutable(mpirun),
                "mpirun.openmpi is not installed (Debian: openmpi-bin; bin/test installs it when run as root)");
        List<String> cmd = new ArrayList<>(List.of(mpirun.toString(), "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                "-np", "" + N, "-x", "JDIST_BACKEND=ring", "-x", "JDIST_TIMEOUT=60"));
        cmd.addAll(JavaCommand.of(ClusterCheckProgram.class));
        try (ChildProcesses job = new ChildProcesses()) {
            job.start(dir, "mpirun", cmd, Map.of());
            int code = job.await(0, LIMIT_SECONDS);
            String out = job.output(0);
            assertThat(code).as("mpirun exit code; output:%n%s", out).isZero();
            for (int r = 0; r < N; r++) assertThat(out).contains("rank " + r + " of " + N + ": OK (backend ring, source mpi)");
        }
    }
}
