package dev.jdist.cluster;

import java.util.Locale;

/**
 * Where {@code Distributed.init()} found its job, in the order it looks (docs/clusters.md). The first source whose
 * variables are present wins; {@code JDIST_JOB_SOURCE} names one explicitly ({@code none} turns discovery off).
 */
public enum JobSource {
    /** Nothing found: a 1-process program. */
    NONE("no job variables"),
    /** The backends' own MLX variables (MLX_RANK, MLX_HOSTFILE, NCCL_HOST_IP, MLX_JACCL_COORDINATOR, ...): today's start. */
    MLX("MLX variables (MLX_RANK, MLX_HOSTFILE, ...)"),
    /** JDIST_RANK, JDIST_WORLD_SIZE, JDIST_MASTER_ADDR, JDIST_MASTER_PORT. */
    JDIST("jdist variables (JDIST_RANK, JDIST_WORLD_SIZE, JDIST_MASTER_ADDR)"),
    /** torchrun and Kubeflow's PyTorchJob: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT. */
    TORCHRUN("torchrun / PyTorchJob variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)"),
    /** Kubeflow Trainer v2: PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT. */
    TRAINER_V2("Kubeflow Trainer v2 variables (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT)"),
    /** An MPI launcher used to start processes: Open MPI's OMPI_COMM_WORLD_*, MPICH's PMI_RANK/PMI_SIZE, PMIX_RANK. */
    MPI("MPI launcher variables (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, PMIX_RANK)"),
    /** A task of a Slurm job step (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST. */
    SLURM("Slurm variables (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST)"),
    /** A pod of a Kubernetes Indexed Job: JOB_COMPLETION_INDEX with JDIST_WORLD_SIZE and JDIST_MASTER_ADDR. */
    KUBERNETES("Kubernetes Indexed Job variables (JOB_COMPLETION_INDEX, JDIST_WORLD_SIZE, JDIST_MASTER_ADDR)");

    private final String description;

    JobSource(String description) { this.description = description; }

    /** The name {@code JDIST_JOB_SOURCE} takes and records carry: {@code torchrun}, {@code trainer-v2}, ... */
    public String id() { return name().toLowerCase(Locale.ROOT).replace('_', '-'); }

    public String description() { return description; }

    /** Whether ranks found this way meet through the rendezvous store (every source but NONE and MLX). */
    public boolean usesRendezvous() { return this != NONE && this != MLX; }

    static JobSource byId(String id) {
        for (JobSource s : values()) if (s.id().equals(id)) return s;
        return null;
    }
}
