package dev.jdist.cluster;

import dev.jdist.ConfigException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Finds the job this process belongs to from its environment, in the documented order (docs/clusters.md):
 * <ol>
 *   <li>MLX variables ({@code MLX_RANK}, {@code MLX_HOSTFILE}): the backends read their own variables, exactly as
 *       before; nothing below is consulted;</li>
 *   <li>jdist variables: {@code JDIST_RANK}, {@code JDIST_WORLD_SIZE}, {@code JDIST_MASTER_ADDR};</li>
 *   <li>torchrun / PyTorchJob: {@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code MASTER_ADDR},
 *       {@code MASTER_PORT};</li>
 *   <li>Kubeflow Trainer v2: {@code PET_NNODES}, {@code PET_NPROC_PER_NODE}, {@code PET_NODE_RANK},
 *       {@code PET_MASTER_ADDR}, {@code PET_MASTER_PORT};</li>
 *   <li>MPI launchers: {@code OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK}, {@code PMI_RANK/PMI_SIZE}, {@code PMIX_RANK};</li>
 *   <li>Slurm: {@code SLURM_PROCID}, {@code SLURM_NTASKS}, {@code SLURM_LOCALID}, {@code SLURM_STEP_NODELIST} /
 *       {@code SLURM_JOB_NODELIST};</li>
 *   <li>a Kubernetes Indexed Job: {@code JOB_COMPLETION_INDEX} with {@code JDIST_WORLD_SIZE} and
 *       {@code JDIST_MASTER_ADDR}.</li>
 * </ol>
 * {@code JDIST_MASTER_ADDR} and {@code JDIST_MASTER_PORT} override every source's rendezvous address;
 * {@code JDIST_JOB_SOURCE} picks one source by name ({@code none}: look for nothing, a 1-process program).
 *
 * <p>Pure: reads the map, opens nothing, resolves no name. Every bad value is a {@link ConfigException} naming the
 * variable and the fix.
 */
public final class JobDiscovery {

    public static final String JOB_SOURCE = "JDIST_JOB_SOURCE";
    public static final String RANK = "JDIST_RANK";
    public static final String WORLD_SIZE = "JDIST_WORLD_SIZE";
    public static final String LOCAL_RANK = "JDIST_LOCAL_RANK";
    public static final String MASTER_ADDR = "JDIST_MASTER_ADDR";
    public static final String MASTER_PORT = "JDIST_MASTER_PORT";
    /** The store's port when nothing else gives one: the port just below the ring launcher's first port (32323). */
    public static final int DEFAULT_PORT = 32322;
    /** Ports derived from a job id (Slurm, Open MPI) fall in [15000, 32000): below Linux's ephemeral ports. */
    static final int DERIVED_PORT_BASE = 15000;
    static final int DERIVED_PORT_SPAN = 17000;
    /** The largest world size jdist accepts from a variable. */
    public static final int MAX_SIZE = 1 << 20;

    private JobDiscovery() {}

    /** What discovery concluded: the source, the job when the ranks meet through the rendezvous, and what was read. */
    public record Finding(JobSource source, Optional<ClusterJob> job, List<String> notes) {
        public Finding {
            notes = List.copyOf(notes);
        }

        /** One line per fact, for {@code jdist doctor --env}. */
        public List<String> explain() {
            List<String> lines = new ArrayList<>();
            lines.add("job source: " + source.id() + " — " + source.description());
            lines.addAll(notes);
            job.ifPresent(j -> lines.addAll(j.evidence()));
            job.ifPresent(j -> {
                if (j.problem() != null) lines.add("problem: " + j.problem());
            });
            return lines;
        }
    }

    /**
     * Looks for the job in {@code env} in the documented order; every bad value is a {@link ConfigException}, a rank
     * that is not below the size included.
     */
    public static Finding detect(Map<String, String> env) {
        Finding f = inspect(env);
        if (f.job().isPresent() && f.job().get().problem() != null) throw new ConfigException(f.job().get().problem());
        return f;
    }

    /**
     * As {@link #detect}, except that a rank not below the size is returned in the job's {@link ClusterJob#problem}
     * instead of thrown: {@code Distributed.init} still meets the others with it, so every rank gets one error naming
     * both sizes.
     */
    public static Finding inspect(Map<String, String> env) {
        String forced = value(env, JOB_SOURCE);
        if (forced != null && !forced.equals("auto")) {
            JobSource s = JobSource.byId(forced.toLowerCase(Locale.ROOT));
            if (s == null) {
                List<String> ids = new ArrayList<>(List.of("auto"));
                for (JobSource x : JobSource.values()) ids.add(x.id());
                throw new ConfigException(JOB_SOURCE + "=\"" + forced + "\" is not a job source; use one of "
                        + String.join(", ", ids) + " (or unset it to look in the documented order)");
            }
            if (s == JobSource.NONE || s == JobSource.MLX) {
                return new Finding(s, Optional.empty(), List.of(JOB_SOURCE + "=" + forced + " chose it"));
            }
            Optional<ClusterJob> job = find(s, env);
            if (job.isEmpty()) {
                throw new ConfigException(JOB_SOURCE + "=" + forced + " but this environment has no " + s.description()
                        + "; set that source's variables, or unset " + JOB_SOURCE);
            }
            return new Finding(s, job, List.of(JOB_SOURCE + "=" + forced + " chose it"));
        }
        if (isSet(env, "MLX_RANK") || isSet(env, "MLX_HOSTFILE")) {
            return new Finding(JobSource.MLX, Optional.empty(), List.of("MLX_RANK=" + shown(env.get("MLX_RANK"))
                    + ", MLX_HOSTFILE=" + shown(env.get("MLX_HOSTFILE")) + ": the backends read their own variables"));
        }
        for (JobSource s : List.of(JobSource.JDIST, JobSource.TORCHRUN, JobSource.TRAINER_V2, JobSource.MPI,
                JobSource.SLURM, JobSource.KUBERNETES)) {
            Optional<ClusterJob> job = find(s, env);
            if (job.isPresent()) return new Finding(s, job, List.of());
        }
        if (isSet(env, WORLD_SIZE)) {
            throw new ConfigException(WORLD_SIZE + "=" + env.get(WORLD_SIZE) + " is set but this process's rank is not: set "
                    + RANK + " (0.." + "WORLD_SIZE-1, one per process), or run it as a Kubernetes Indexed Job (which sets "
                    + "JOB_COMPLETION_INDEX)");
        }
        return new Finding(JobSource.NONE, Optional.empty(), List.of());
    }

    private static Optional<ClusterJob> find(JobSource s, Map<String, String> env) {
        return switch (s) {
            case JDIST -> jdist(env);
            case TORCHRUN -> torchrun(env);
            case TRAINER_V2 -> trainerV2(env);
            case MPI -> mpi(env);
            case SLURM -> slurm(env);
            case KUBERNETES -> kubernetes(env);
            case NONE, MLX -> Optional.empty();
        };
    }

    // ------------------------------------------------------------------ the sources

    static Optional<ClusterJob> jdist(Map<String, String> env) {
        if (!isSet(env, RANK)) return Optional.empty();
        Facts f = new Facts(JobSource.JDIST);
        int size = f.count(env, WORLD_SIZE, "the number of processes in the job");
        int rank = f.rank(env, RANK, size, WORLD_SIZE);
        int local = f.optionalIndex(env, LOCAL_RANK);
        return Optional.of(f.job(env, rank, size, RANK, WORLD_SIZE, local, null, null, DEFAULT_PORT,
                "default port " + DEFAULT_PORT));
    }

    static Optional<ClusterJob> torchrun(Map<String, String> env) {
        boolean sized = isSet(env, "WORLD_SIZE");
        if (!sized && !(isSet(env, "RANK") && isSet(env, "MASTER_ADDR"))) return Optional.empty();
        Facts f = new Facts(JobSource.TORCHRUN);
        int size = f.count(env, "WORLD_SIZE", "the number of processes in the job");
        if (!isSet(env, "RANK")) {
            throw new ConfigException("WORLD_SIZE=" + env.get("WORLD_SIZE") + " is set (torchrun / PyTorchJob variables) but RANK "
                    + "is not, so this process cannot tell which of the " + size + " processes it is; the launcher must set "
                    + "RANK (0.." + (size - 1) + ") for every process (torchrun and Kubeflow's PyTorchJob do)");
        }
        int rank = f.rank(env, "RANK", size, "WORLD_SIZE");
        int local = f.optionalIndex(env, "LOCAL_RANK");
        Integer port = null;
        String portFrom = null;
        if (isSet(env, "MASTER_PORT")) {
            port = f.port(env, "MASTER_PORT");
            portFrom = "MASTER_PORT=" + port;
            // torchrun's agent serves torch's own TCPStore on MASTER_PORT: jdist's store takes the next port
            if ("true".equalsIgnoreCase(env.get("TORCHELASTIC_USE_AGENT_STORE"))) {
                if (port == 65535) {
                    throw new ConfigException("MASTER_PORT=65535 leaves no port for jdist's rendezvous next to torchrun's "
                            + "store; set " + MASTER_PORT + " to a free port");
                }
                port = port + 1;
                portFrom = "MASTER_PORT+1 = " + port + " (torchrun's agent serves torch's store on MASTER_PORT)";
            }
        }
        return Optional.of(f.job(env, rank, size, "RANK", "WORLD_SIZE", local, "MASTER_ADDR", "MASTER_PORT", port, portFrom));
    }

    static Optional<ClusterJob> trainerV2(Map<String, String> env) {
        if (!isSet(env, "PET_NNODES") && !isSet(env, "PET_NODE_RANK")) return Optional.empty();
        Facts f = new Facts(JobSource.TRAINER_V2);
        String nnodesText = env.get("PET_NNODES");
        if (nnodesText != null && nnodesText.contains(":")) {
            throw new ConfigException("PET_NNODES=" + nnodesText + " is an elastic range; jdist needs a fixed number of nodes "
                    + "(set the TrainJob's numNodes to one number)");
        }
        int nodes = f.count(env, "PET_NNODES", "the number of nodes (pods) of the TrainJob");
        int perNode = 1;
        if (isSet(env, "PET_NPROC_PER_NODE")) {
            String t = env.get("PET_NPROC_PER_NODE").strip();
            if (!t.chars().allMatch(Character::isDigit)) {
                throw new ConfigException("PET_NPROC_PER_NODE=" + t + " is not a number of processes; jdist needs a number "
                        + "(\"auto\", \"cpu\" and \"gpu\" are torchrun's to resolve): set numProcPerNode in the TrainJob");
            }
            perNode = f.count(env, "PET_NPROC_PER_NODE", "the number of processes per node");
        }
        int node = f.index(env, "PET_NODE_RANK", nodes, "PET_NNODES");
        int local;
        String localFrom;
        if (isSet(env, "LOCAL_RANK")) {
            local = f.index(env, "LOCAL_RANK", perNode, "PET_NPROC_PER_NODE");
            localFrom = "LOCAL_RANK";
        } else if (isSet(env, LOCAL_RANK)) {
            local = f.index(env, LOCAL_RANK, perNode, "PET_NPROC_PER_NODE");
            localFrom = LOCAL_RANK;
        } else if (perNode == 1) {
            local = 0;
            localFrom = "PET_NPROC_PER_NODE=1";
        } else {
            throw new ConfigException("PET_NPROC_PER_NODE=" + perNode + " says each node runs " + perNode + " processes, but this "
                    + "process cannot tell which one it is: start each with LOCAL_RANK=0.." + (perNode - 1) + " (torchrun does; "
                    + "for a JVM started directly set LOCAL_RANK or " + LOCAL_RANK + ")");
        }
        if ((long) nodes * perNode > MAX_SIZE) {
            throw new ConfigException("PET_NNODES=" + nodes + " × PET_NPROC_PER_NODE=" + perNode + " is more than " + MAX_SIZE
                    + " processes");
        }
        int size = nodes * perNode;
        int rank = node * perNode + local;
        f.evidence.add("rank " + rank + " = PET_NODE_RANK " + node + " × PET_NPROC_PER_NODE " + perNode + " + local rank " + local
                + " (" + localFrom + ")");
        return Optional.of(f.job(env, rank, size, "PET_NODE_RANK, " + localFrom, "PET_NNODES × PET_NPROC_PER_NODE", local,
                "PET_MASTER_ADDR", "PET_MASTER_PORT", null, null));
    }

    /** Whether an MPI launcher (Open MPI, an MPICH/Hydra launcher, a PMIx launcher) started this process. */
    public static boolean startedByMpiLauncher(Map<String, String> env) {
        return isSet(env, "OMPI_COMM_WORLD_RANK") || isSet(env, "OMPI_COMM_WORLD_SIZE") || isSet(env, "PMI_RANK")
                || isSet(env, "PMI_SIZE") || isSet(env, "PMIX_RANK");
    }

    static Optional<ClusterJob> mpi(Map<String, String> env) {
        Facts f = new Facts(JobSource.MPI);
        String rankVar;
        String sizeVar;
        String localVar;
        String localSizeVar;
        String family;
        if (isSet(env, "OMPI_COMM_WORLD_RANK") || isSet(env, "OMPI_COMM_WORLD_SIZE")) {
            rankVar = "OMPI_COMM_WORLD_RANK";
            sizeVar = "OMPI_COMM_WORLD_SIZE";
            localVar = "OMPI_COMM_WORLD_LOCAL_RANK";
            localSizeVar = "OMPI_COMM_WORLD_LOCAL_SIZE";
            family = "Open MPI's mpirun";
        } else if (isSet(env, "PMI_RANK") || isSet(env, "PMI_SIZE")) {
            rankVar = "PMI_RANK";
            sizeVar = "PMI_SIZE";
            localVar = "MPI_LOCALRANKID";
            localSizeVar = "MPI_LOCALNRANKS";
            family = "an MPICH (Hydra) launcher";
        } else if (isSet(env, "PMIX_RANK")) {
            if (!isSet(env, WORLD_SIZE)) {
                if (isSet(env, "SLURM_PROCID")) return Optional.empty();   // srun --mpi=pmix: the Slurm source has the size
                throw new ConfigException("PMIX_RANK=" + env.get("PMIX_RANK") + " says a PMIx launcher started this process, but "
                        + "PMIx does not put the job's size in the environment: set " + WORLD_SIZE + " (the number of processes), "
                        + "or start the job with mpirun, srun or `jdist launch`");
            }
            rankVar = "PMIX_RANK";
            sizeVar = WORLD_SIZE;
            localVar = null;
            localSizeVar = null;
            family = "a PMIx launcher";
        } else {
            return Optional.empty();
        }
        int size = f.count(env, sizeVar, "the number of processes " + family + " started");
        if (!isSet(env, rankVar)) {
            throw new ConfigException(sizeVar + "=" + size + " is set but " + rankVar + " is not, so this process cannot tell "
                    + "which of the " + size + " processes it is; start it with " + family + " (which sets both)");
        }
        int rank = f.rank(env, rankVar, size, sizeVar);
        int local = localVar == null ? -1 : f.optionalIndex(env, localVar);
        f.evidence.add("started by " + family);
        String host = null;
        String hostFrom = null;
        if (!isSet(env, MASTER_ADDR) && size > 1) {
            int localSize = localSizeVar == null || !isSet(env, localSizeVar) ? -1 : f.count(env, localSizeVar, "ranks on this host");
            if (localSize == size) {
                host = "127.0.0.1";
                hostFrom = "every rank on this host (" + localSizeVar + "=" + localSize + " = " + sizeVar + ")";
            } else if (isSet(env, "SLURM_PROCID")) {
                return Optional.empty();   // srun's PMI: the Slurm source knows rank 0's node
            } else {
                throw new ConfigException(family + " started " + size + " processes" + (localSize > 0 ? ", " + localSize
                        + " of them on this host (" + localSizeVar + ")" : "") + ", and jdist cannot tell where rank 0 runs: set "
                        + MASTER_ADDR + " to rank 0's host (e.g. mpirun -x " + MASTER_ADDR + "=host0 ...), and "
                        + MASTER_PORT + " if the default port " + DEFAULT_PORT + " is taken");
            }
        }
        String jobId = firstSet(env, "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE");
        int port = DEFAULT_PORT;
        String portFrom = "default port " + DEFAULT_PORT;
        if (jobId != null) {
            String v = env.get(jobId).strip();
            long id;
            try {
                id = Long.parseLong(v);
            } catch (NumberFormatException e) {
                id = v.hashCode() & 0x7fffffffL;
            }
            port = DERIVED_PORT_BASE + Math.floorMod(id, DERIVED_PORT_SPAN);
            portFrom = "port " + port + " derived from " + jobId + "=" + v;
        }
        return Optional.of(f.job(env, rank, size, rankVar, sizeVar, local, null, null, port, portFrom, host, hostFrom));
    }

    static Optional<ClusterJob> slurm(Map<String, String> env) {
        String jobVar = firstSet(env, "SLURM_JOB_ID", "SLURM_JOBID");
        if (jobVar == null || !(isSet(env, "SLURM_PROCID") || isSet(env, "SLURM_NTASKS") || isSet(env, "SLURM_NPROCS"))) {
            return Optional.empty();
        }
        Facts f = new Facts(JobSource.SLURM);
        String sizeVar = firstSet(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS");
        String stepVar = firstSet(env, "SLURM_STEP_ID", "SLURM_STEPID");
        long stepId = -1;
        if (stepVar != null) {
            String t = env.get(stepVar).strip();
            if (t.chars().allMatch(Character::isDigit) && t.length() <= 10) stepId = Long.parseLong(t);
            // the batch script, the extern step and the interactive step have special ids (near 2^32)
            if (stepId >= 0xFFFFFFF0L) stepId = -1;
        }
        if (stepId < 0) {
            // the batch script or an salloc shell: not a task of a job step
            int n = sizeVar == null ? 1 : f.count(env, sizeVar, "the number of tasks");
            if (n <= 1) return Optional.empty();
            throw new ConfigException("this process runs inside Slurm job " + env.get(jobVar) + " (" + sizeVar + "=" + n
                    + ") but not as a task of a job step (no SLURM_STEP_ID: the batch script or an salloc shell), so it "
                    + "cannot tell its rank: start the ranks with `srun` (or `jdist launch`), or set " + JOB_SOURCE
                    + "=none to run this one process alone");
        }
        if (sizeVar == null) {
            throw new ConfigException("Slurm job step " + env.get(jobVar) + "." + stepId + " sets no SLURM_NTASKS (nor "
                    + "SLURM_STEP_NUM_TASKS, SLURM_NPROCS); start the step with `srun -n N`");
        }
        int size = f.count(env, sizeVar, "the number of tasks in the job step");
        if (!isSet(env, "SLURM_PROCID")) {
            throw new ConfigException(sizeVar + "=" + size + " is set in Slurm job step " + env.get(jobVar) + "." + stepId
                    + " but SLURM_PROCID is not, so this process cannot tell which task it is; start it with `srun`");
        }
        int rank = f.rank(env, "SLURM_PROCID", size, sizeVar);
        int local = f.optionalIndex(env, "SLURM_LOCALID");
        String host = null;
        String hostFrom = null;
        if (!isSet(env, MASTER_ADDR)) {
            String listVar = firstSet(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST");
            if (listVar == null) {
                throw new ConfigException("Slurm job step " + env.get(jobVar) + "." + stepId + " sets no node list "
                        + "(SLURM_STEP_NODELIST, SLURM_JOB_NODELIST); set " + MASTER_ADDR + " to the host of task 0");
            }
            host = Hostlist.first(listVar, env.get(listVar));
            hostFrom = "first node of " + listVar + "=" + env.get(listVar);
        }
        long jobId = f.longValue(env, jobVar);
        int port = DERIVED_PORT_BASE + (int) Math.floorMod(16 * jobId + stepId % 16, (long) DERIVED_PORT_SPAN);
        String portFrom = "port " + port + " derived from " + jobVar + "=" + jobId + " and " + stepVar + "=" + stepId;
        return Optional.of(f.job(env, rank, size, "SLURM_PROCID", sizeVar, local, null, null, port, portFrom, host, hostFrom));
    }

    static Optional<ClusterJob> kubernetes(Map<String, String> env) {
        if (!isSet(env, "JOB_COMPLETION_INDEX")) return Optional.empty();
        Facts f = new Facts(JobSource.KUBERNETES);
        if (!isSet(env, WORLD_SIZE)) {
            throw new ConfigException("JOB_COMPLETION_INDEX=" + env.get("JOB_COMPLETION_INDEX") + " says this is a pod of a "
                    + "Kubernetes Indexed Job, but " + WORLD_SIZE + " is not set: set it to the Job's completions (the number of "
                    + "pods) in the pod template's env");
        }
        int size = f.count(env, WORLD_SIZE, "the Indexed Job's completions");
        int rank = f.rank(env, "JOB_COMPLETION_INDEX", size, WORLD_SIZE);
        if (size > 1 && !isSet(env, MASTER_ADDR)) {
            throw new ConfigException("a Kubernetes Indexed Job needs " + MASTER_ADDR + ": the DNS name of the pod with index 0 "
                    + "through a headless Service, e.g. <job-name>-0.<service-name> (set the Job's spec.template.spec.subdomain "
                    + "to the Service's name)");
        }
        int local = f.optionalIndex(env, LOCAL_RANK);
        return Optional.of(f.job(env, rank, size, "JOB_COMPLETION_INDEX", WORLD_SIZE, local, null, null, DEFAULT_PORT,
                "default port " + DEFAULT_PORT));
    }

    // ------------------------------------------------------------------ parsing helpers

    /** Reads one source's facts, collecting what it read. */
    private static final class Facts {
        final JobSource source;
        final List<String> evidence = new ArrayList<>();

        Facts(JobSource source) { this.source = source; }

        int count(Map<String, String> env, String var, String what) {
            String t = value(env, var);
            if (t == null) {
                throw new ConfigException(var + " is not set; it must be " + what + " (a whole number >= 1)");
            }
            long v = digits(var, t, what + " (a whole number >= 1)");
            if (v < 1 || v > MAX_SIZE) {
                throw new ConfigException(var + "=" + t + " is out of range: it must be " + what + ", from 1 to " + MAX_SIZE);
            }
            evidence.add(var + "=" + v);
            return (int) v;
        }

        String problem;

        /** A rank: like {@link #index}, but a value not below the size is kept as the job's problem. */
        int rank(Map<String, String> env, String var, int size, String sizeVar) {
            String t = value(env, var);
            if (t == null) throw new ConfigException(var + " is not set; it must be a whole number from 0 to " + (size - 1));
            long v = digits(var, t, "a whole number from 0 to " + (size - 1));
            if (v >= size) {
                if (v > MAX_SIZE) throw new ConfigException(var + "=" + t + " is out of range (at most " + MAX_SIZE + ")");
                problem = var + "=" + t + " is not below " + sizeVar + "=" + size + ": valid values are 0.." + (size - 1)
                        + "; every process of the job must be started with the same " + sizeVar;
            }
            evidence.add(var + "=" + v);
            return (int) v;
        }

        int index(Map<String, String> env, String var, int bound, String boundVar) {
            String t = value(env, var);
            if (t == null) throw new ConfigException(var + " is not set; it must be a whole number from 0 to " + (bound - 1));
            long v = digits(var, t, "a whole number from 0 to " + (bound - 1));
            if (v >= bound) {
                throw new ConfigException(var + "=" + t + " is not below " + boundVar + "=" + bound + ": valid values are 0.."
                        + (bound - 1) + "; every process of the job must be started with the same " + boundVar);
            }
            evidence.add(var + "=" + v);
            return (int) v;
        }

        int optionalIndex(Map<String, String> env, String var) {
            String t = value(env, var);
            if (t == null) return -1;
            long v = digits(var, t, "a whole number >= 0");
            if (v > MAX_SIZE) throw new ConfigException(var + "=" + t + " is out of range (at most " + MAX_SIZE + ")");
            evidence.add(var + "=" + v);
            return (int) v;
        }

        long longValue(Map<String, String> env, String var) {
            String t = value(env, var);
            if (t == null) throw new ConfigException(var + " is not set");
            return digits(var, t, "a whole number");
        }

        int port(Map<String, String> env, String var) {
            String t = value(env, var);
            long v = digits(var, t, "a TCP port (1..65535)");
            if (v < 1 || v > 65535) throw new ConfigException(var + "=" + t + " is not a TCP port; use 1..65535");
            return (int) v;
        }

        ClusterJob job(Map<String, String> env, int rank, int size, String rankVar, String sizeVar, int local,
                       String hostVar, String portVar, Integer port, String portFrom) {
            return job(env, rank, size, rankVar, sizeVar, local, hostVar, portVar, port, portFrom, null, null);
        }

        /**
         * The job, with the rendezvous address: JDIST_MASTER_ADDR/PORT first, then the source's own variables
         * ({@code hostVar}/{@code portVar}), then what the source derived ({@code host}/{@code port}).
         */
        ClusterJob job(Map<String, String> env, int rank, int size, String rankVar, String sizeVar, int local,
                       String hostVar, String portVar, Integer port, String portFrom, String host, String hostFrom) {
            String h;
            String hFrom;
            if (isSet(env, MASTER_ADDR)) {
                h = value(env, MASTER_ADDR);
                hFrom = MASTER_ADDR;
            } else if (hostVar != null && isSet(env, hostVar)) {
                h = value(env, hostVar);
                hFrom = hostVar;
            } else if (host != null) {
                h = host;
                hFrom = hostFrom;
            } else if (size == 1) {
                h = "127.0.0.1";
                hFrom = "a 1-process job";
            } else {
                throw new ConfigException((hostVar != null ? hostVar + " is not set: " : "") + "the " + source.description()
                        + " say this is rank " + rank + " of " + size + " but not where rank 0 serves the rendezvous: set "
                        + (hostVar != null ? hostVar + " (or " + MASTER_ADDR + ")" : MASTER_ADDR) + " to rank 0's host");
            }
            checkHost(hFrom, h);
            int p;
            String pFrom;
            if (isSet(env, MASTER_PORT)) {
                p = port(env, MASTER_PORT);
                pFrom = MASTER_PORT;
            } else if (port != null) {
                p = port;
                pFrom = portFrom;
            } else if (portVar != null && isSet(env, portVar)) {
                p = port(env, portVar);
                pFrom = portVar;
            } else if (size == 1) {
                p = DEFAULT_PORT;
                pFrom = "a 1-process job";
            } else {
                throw new ConfigException(portVar + " is not set: the " + source.description() + " need the port rank 0 serves "
                        + "the rendezvous on; set " + portVar + " (or " + MASTER_PORT + ") to a free port on rank 0's host");
            }
            String from = hFrom.equals(pFrom) ? hFrom : hFrom + "; " + pFrom;
            evidence.add("rendezvous at " + h + ":" + p + " (host: " + hFrom + "; port: " + pFrom + ")");
            return new ClusterJob(source, rank, size, rankVar, sizeVar, local, h, p, from, evidence, problem);
        }

        private static void checkHost(String var, String h) {
            if (h.isEmpty() || h.length() > 253 || !h.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '-' || c == '.'
                    || c == '_')) {
                throw new ConfigException("\"" + h + "\" (" + var + ") is not a host name or IPv4 address; set it to rank 0's "
                        + "host, e.g. node0, node0.cluster.local or 10.0.0.1 (IPv6 is not supported: the ring is IPv4 only)");
            }
        }
    }

    private static long digits(String var, String text, String what) {
        if (text.isEmpty() || text.length() > 18 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new ConfigException(var + "=\"" + text + "\" is not " + what);
        }
        return Long.parseLong(text);
    }

    private static boolean isSet(Map<String, String> env, String var) {
        return value(env, var) != null;
    }

    /** The value, or null when unset or empty (an empty variable means unset, as the shells' VAR= does). */
    private static String value(Map<String, String> env, String var) {
        String v = env.get(var);
        return v == null || v.isEmpty() ? null : v;
    }

    private static String firstSet(Map<String, String> env, String... vars) {
        for (String v : vars) if (isSet(env, v)) return v;
        return null;
    }

    private static String shown(String v) { return v == null ? "<unset>" : v; }
}
