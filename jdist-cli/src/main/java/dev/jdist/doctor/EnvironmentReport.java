package dev.jdist.doctor;

import dev.jdist.DistributedException;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.cluster.JobDiscovery;
import dev.jdist.cluster.JobSource;
import dev.jdist.rendezvous.Rendezvous;
import dev.jdist.spi.JobToken;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * {@code jdist doctor --env}: which job {@code Distributed.init()} would find in this process's environment and how it
 * would start (docs/clusters.md), from {@link JobDiscovery#inspect} — without connecting anywhere. Pure: the
 * environment and the backend check are inputs.
 *
 * @param lines what to print, one fact per line
 * @param ok    false when {@code Distributed.init()} would fail here with what it found (a bad variable, a rank not
 *              below its size, a batch script of several tasks)
 */
public record EnvironmentReport(List<String> lines, boolean ok) {

    /** The names {@code JDIST_BACKEND} takes (Distributed's). */
    static final List<String> BACKENDS = List.of("any", "ring", "jaccl", "mpi", "nccl");

    /**
     * @param env         the environment to read (the process's own in the CLI)
     * @param unavailable why a backend cannot start on this machine, empty when it can ({@code Distributed::unavailableReason})
     */
    public static EnvironmentReport of(Map<String, String> env, Function<String, Optional<String>> unavailable) {
        List<String> lines = new ArrayList<>();
        JobDiscovery.Finding finding;
        try {
            finding = JobDiscovery.inspect(env);
        } catch (DistributedException e) {
            lines.add("job source: none usable — Distributed.init() fails here:");
            lines.add("  error: " + e.getMessage());
            return new EnvironmentReport(lines, false);
        }
        List<String> explained = finding.explain();
        lines.add(explained.getFirst());
        explained.subList(1, explained.size()).forEach(l -> lines.add("  " + l));

        String backend = value(env, "JDIST_BACKEND");
        String chosen = backend == null ? "any" : backend;
        boolean ok = true;
        switch (finding.source()) {
            case NONE -> lines.add("Distributed.init(): a 1-process program (the 1-rank group); Distributed.init(true, ...) "
                    + "fails: nothing says which job this process belongs to");
            case MLX -> lines.add("Distributed.init(): the backends read their MLX variables (MLX_RANK, MLX_HOSTFILE, ...), as "
                    + "under jdist launch or mlx.launch; no rendezvous");
            default -> {
                ClusterJob job = finding.job().orElseThrow();
                if (job.problem() != null) {
                    ok = false;
                    lines.add("Distributed.init() fails on every rank: " + job.problem());
                } else if (chosen.equals("mpi") || (chosen.equals("any") && finding.source() == JobSource.MPI)) {
                    lines.add("Distributed.init(): rank " + job.rank() + " of " + job.size() + ", an MPI job: the mpi backend "
                            + "starts it (MPI_Init); set JDIST_BACKEND=ring to use the launcher only to start processes");
                } else {
                    lines.add("Distributed.init(): rank " + job.rank() + " of " + job.size() + "; meets the other ranks through "
                            + "the rendezvous store that rank 0 serves at " + job.masterHost() + ":" + job.masterPort());
                    String deadline;
                    try {
                        deadline = deadline(env);
                    } catch (DistributedException e) {
                        ok = false;
                        deadline = "invalid: " + e.getMessage();
                    }
                    lines.add("rendezvous deadline: " + deadline + "; the address published: "
                            + (value(env, Rendezvous.IFNAME) != null ? "the IPv4 address of " + Rendezvous.IFNAME + "="
                            + value(env, Rendezvous.IFNAME) : "that of the interface that routes to rank 0 (" + Rendezvous.IFNAME
                            + " unset)"));
                    lines.add("job token: " + (value(env, JobToken.VARIABLE) != null ? JobToken.VARIABLE
                            + " set: the store and the ring authenticate every rank" : JobToken.VARIABLE + " unset: the store "
                            + "trusts whoever speaks its protocol (set the same token on every rank on a shared network)"));
                }
            }
        }
        if (finding.source() != JobSource.NONE) {
            if (backend != null && !BACKENDS.contains(backend)) {
                ok = false;
                lines.add("backend: JDIST_BACKEND=\"" + backend + "\" is not a backend; use one of " + String.join(", ", BACKENDS)
                        + " (or unset it: \"any\")");
            } else if (backend != null) {
                lines.add("backend: " + backend + " (JDIST_BACKEND)" + unavailable.apply(backend).map(w -> "; not usable on "
                        + "this machine: " + w).orElse(""));
            } else {
                Optional<String> nccl = unavailable.apply("nccl");
                lines.add("backend: \"any\" (JDIST_BACKEND unset): " + (nccl.isEmpty() ? "nccl (usable on this machine)"
                        : "ring (nccl is not usable here: " + nccl.get() + ")") + "; every rank must choose alike");
            }
        }
        return new EnvironmentReport(lines, ok);
    }

    /** The rendezvous deadline and where it came from; a bad value throws, naming its variable. */
    private static String deadline(Map<String, String> env) {
        Duration d = Rendezvous.timeout(env);
        String from = value(env, Rendezvous.TIMEOUT) != null ? Rendezvous.TIMEOUT
                : value(env, "JDIST_TIMEOUT") != null ? "JDIST_TIMEOUT" : "the default";
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s (" + from + ")" : d.toMillis() + " ms (" + from + ")";
    }

    private static String value(Map<String, String> env, String name) {
        String v = env.get(name);
        return v == null || v.isBlank() ? null : v.strip();
    }
}
