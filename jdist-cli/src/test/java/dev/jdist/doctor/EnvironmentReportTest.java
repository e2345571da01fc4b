package dev.jdist.doctor;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code jdist doctor --env}: what Distributed.init() would find, from the environment alone. */
class EnvironmentReportTest {

    private static final Function<String, Optional<String>> NO_GPU =
            b -> b.equals("nccl") ? Optional.of("libnccl.so.2 not found") : Optional.empty();

    private static String text(EnvironmentReport r) {
        return String.join("\n", r.lines());
    }

    @Test
    void aSlurmTaskShowsTheVariablesTheRankAndTheDerivedRendezvous() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("SLURM_JOB_ID", "42", "SLURM_STEP_ID", "0", "SLURM_PROCID", "1",
                "SLURM_NTASKS", "4", "SLURM_STEP_NUM_TASKS", "4", "SLURM_LOCALID", "1", "SLURM_STEP_NODELIST", "node[07-08]",
                "SLURM_JOB_NODELIST", "node[07-08]"), NO_GPU);
        assertThat(r.ok()).isTrue();
        assertThat(r.lines().getFirst()).startsWith("job source: slurm — Slurm variables");
        assertThat(text(r)).contains("  SLURM_STEP_NUM_TASKS=4", "  SLURM_PROCID=1", "  SLURM_LOCALID=1")
                .contains("rendezvous at node07:15672 (host: first node of SLURM_STEP_NODELIST=node[07-08]; port: port 15672 "
                        + "derived from SLURM_JOB_ID=42 and SLURM_STEP_ID=0)")
                .contains("Distributed.init(): rank 1 of 4; meets the other ranks through the rendezvous store that rank 0 "
                        + "serves at node07:15672")
                .contains("rendezvous deadline: 120 s (the default)")
                .contains("JDIST_JOB_TOKEN unset")
                .contains("backend: \"any\" (JDIST_BACKEND unset): ring (nccl is not usable here: libnccl.so.2 not found)");
    }

    @Test
    void aBatchScriptWithSeveralTasksIsTheErrorInitRaises() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("SLURM_JOB_ID", "42", "SLURM_PROCID", "0", "SLURM_NTASKS", "4",
                "SLURM_JOB_NODELIST", "node1"), NO_GPU);
        assertThat(r.ok()).isFalse();
        assertThat(text(r)).contains("Distributed.init() fails here")
                .contains("error: this process runs inside Slurm job 42 (SLURM_NTASKS=4) but not as a task of a job step");
    }

    @Test
    void aRankNotBelowItsSizeIsNamed() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("RANK", "5", "WORLD_SIZE", "4", "MASTER_ADDR", "node0",
                "MASTER_PORT", "29500"), NO_GPU);
        assertThat(r.ok()).isFalse();
        assertThat(text(r)).contains("job source: torchrun")
                .contains("Distributed.init() fails on every rank: RANK=5 is not below WORLD_SIZE=4");
    }

    @Test
    void noVariablesIsAOneProcessProgram() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("HOME", "/root"), NO_GPU);
        assertThat(r.ok()).isTrue();
        assertThat(text(r)).startsWith("job source: none").contains("a 1-process program").doesNotContain("backend:");
    }

    @Test
    void mlxVariablesAreTheBackendsOwn() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("MLX_RANK", "0", "MLX_HOSTFILE", "/tmp/h.json"), NO_GPU);
        assertThat(r.ok()).isTrue();
        assertThat(text(r)).startsWith("job source: mlx").contains("MLX_RANK=0, MLX_HOSTFILE=/tmp/h.json")
                .contains("the backends read their MLX variables");
    }

    @Test
    void anMpiLaunchersJobStaysAnMpiJobUnderAny() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "4"), NO_GPU);
        assertThat(r.ok()).isTrue();
        assertThat(text(r)).contains("job source: mpi").contains("an MPI job: the mpi backend starts it")
                .contains("JDIST_BACKEND=ring");
    }

    @Test
    void theChosenBackendTheTokenTheInterfaceAndTheDeadlineAreShown() {
        EnvironmentReport r = EnvironmentReport.of(Map.of("JOB_COMPLETION_INDEX", "3", "JDIST_WORLD_SIZE", "4",
                "JDIST_MASTER_ADDR", "train-0.train", "JDIST_BACKEND", "ring", "JDIST_JOB_TOKEN", "s3cret",
                "JDIST_IFNAME", "eth1", "JDIST_RENDEZVOUS_TIMEOUT", "90s"), b -> Optional.empty());
        assertThat(r.ok()).isTrue();
        assertThat(text(r)).contains("job source: kubernetes").contains("rank 3 of 4")
                .contains("train-0.train:32322").contains("backend: ring (JDIST_BACKEND)")
                .contains("JDIST_JOB_TOKEN set").doesNotContain("s3cret")
                .contains("the IPv4 address of JDIST_IFNAME=eth1")
                .contains("rendezvous deadline: 90 s (JDIST_RENDEZVOUS_TIMEOUT)");
    }

    @Test
    void badSettingsMakeItFail() {
        Map<String, String> job = Map.of("JDIST_RANK", "0", "JDIST_WORLD_SIZE", "2", "JDIST_MASTER_ADDR", "127.0.0.1");
        EnvironmentReport backend = EnvironmentReport.of(with(job, "JDIST_BACKEND", "rnig"), NO_GPU);
        assertThat(backend.ok()).isFalse();
        assertThat(text(backend)).contains("JDIST_BACKEND=\"rnig\" is not a backend");
        EnvironmentReport deadline = EnvironmentReport.of(with(job, "JDIST_RENDEZVOUS_TIMEOUT", "soon"), NO_GPU);
        assertThat(deadline.ok()).isFalse();
        assertThat(text(deadline)).contains("rendezvous deadline: invalid: ").contains("JDIST_RENDEZVOUS_TIMEOUT");
        EnvironmentReport rank = EnvironmentReport.of(Map.of("RANK", "x", "WORLD_SIZE", "2", "MASTER_ADDR", "h"), NO_GPU);
        assertThat(rank.ok()).isFalse();
        assertThat(text(rank)).contains("error: RANK=\"x\" is not");
    }

    private static Map<String, String> with(Map<String, String> m, String k, String v) {
        var copy = new java.util.HashMap<>(m);
        copy.put(k, v);
        return copy;
    }
}
