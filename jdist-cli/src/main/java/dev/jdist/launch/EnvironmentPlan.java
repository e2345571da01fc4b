package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostEntry;
import dev.jdist.spi.JobToken;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Computes every rank's environment for the ring, jaccl, jaccl-ring and nccl backends (docs/reference/launcher.md §4–§5),
 * and validates the host list for the backend first. Pure: no processes, no files.
 */
public final class EnvironmentPlan {

    public static final Set<String> BACKENDS = Set.of("ring", "mpi", "nccl", "jaccl", "jaccl-ring");
    public static final String BACKEND_ERROR = "The backend should be one of {'ring', 'mpi', 'nccl', 'jaccl', 'jaccl-ring'}";

    /**
     * The inputs of a plan. {@code columns}/{@code lines}: the terminal size, columns 0 = unknown. {@code dumpDir}: the
     * job's directory for flight records ({@code JDIST_DUMP_DIR}), or null for none.
     */
    public record Inputs(String backend, List<HostEntry> hosts, List<String> hostfileEnvs, List<String> cliEnvs,
                         int columns, int lines, boolean verbose, int repeat, int connectionsPerIp,
                         int startingPort, int ncclPort, String jobToken, String dumpDir) {

        /** Without a flight-record directory. */
        public Inputs(String backend, List<HostEntry> hosts, List<String> hostfileEnvs, List<String> cliEnvs,
                      int columns, int lines, boolean verbose, int repeat, int connectionsPerIp,
                      int startingPort, int ncclPort, String jobToken) {
            this(backend, hosts, hostfileEnvs, cliEnvs, columns, lines, verbose, repeat, connectionsPerIp, startingPort, ncclPort,
                    jobToken, null);
        }
    }

    /** The plan: per-rank environments plus warnings to print once (invalid env entries). */
    public record Result(List<RankPlan> ranks, List<String> warnings) {
    }

    private EnvironmentPlan() {
    }

    /** Checks the backend name (E8). */
    public static void checkBackend(String backend) {
        if (!BACKENDS.contains(backend)) {
            throw CliFailure.usage(BACKEND_ERROR + ", not '" + backend + "'");
        }
    }

    /**
     * The common entries (§4.1 steps 1–3) after name validation; invalid entries produce one warning each.
     * With {@code validate=false} (mpi) every entry is kept as given.
     */
    public static List<EnvEntry> commonEntries(Inputs in, boolean validate, List<String> warnings) {
        List<EnvEntry> out = new ArrayList<>();
        List<String> raw = new ArrayList<>(in.hostfileEnvs());
        raw.addAll(in.cliEnvs());
        boolean columnsGiven = false;
        for (String entry : raw) {
            if (entry.startsWith("COLUMNS=")) {
                columnsGiven = true;
            }
            EnvEntry e = EnvEntry.parse(entry);
            if (validate && !e.isValid()) {
                warnings.add("'" + entry + "' is an invalid environment variable so it is ignored");
                continue;
            }
            out.add(e);
        }
        if (in.columns() > 0 && !columnsGiven) {
            out.add(new EnvEntry("COLUMNS", Integer.toString(in.columns())));
            out.add(new EnvEntry("LINES", Integer.toString(Math.max(0, in.lines()))));
        }
        return out;
    }

    public static Result plan(Inputs in) {
        checkBackend(in.backend());
        List<HostEntry> hosts = in.hosts();
        int n = hosts.size();
        validate(in.backend(), hosts, in.connectionsPerIp());
        List<String> warnings = new ArrayList<>();
        List<EnvEntry> common = commonEntries(in, true, warnings);

        List<List<String>> ringAddresses = in.backend().equals("ring") ? ringAddresses(hosts, in.startingPort(), in.connectionsPerIp()) : null;
        List<RankPlan> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            List<EnvEntry> env = new ArrayList<>(common);
            List<RankPlan.FileVar> files = new ArrayList<>();
            boolean dropHostfile = false;
            switch (in.backend()) {
                case "ring" -> {
                    if (in.verbose()) {
                        env.add(new EnvEntry("MLX_RING_VERBOSE", "1"));
                    }
                    if (n >= 2) {
                        files.add(new RankPlan.FileVar("MLX_HOSTFILE", MlxJson.write(ringAddresses)));
                    } else {
                        dropHostfile = env.stream().noneMatch(e -> e.name().equals("MLX_HOSTFILE"));
                    }
                }
                case "nccl" -> {
                    if (in.verbose()) {
                        env.add(new EnvEntry("NCCL_DEBUG", "INFO"));
                    }
                    env.add(new EnvEntry("NCCL_HOST_IP", hosts.get(0).ips().get(0)));
                    env.add(new EnvEntry("NCCL_PORT", Integer.toString(in.ncclPort())));
                    env.add(new EnvEntry("MLX_WORLD_SIZE", Integer.toString(n)));
                    env.add(new EnvEntry("CUDA_VISIBLE_DEVICES", Integer.toString(r % in.repeat())));
                }
                case "jaccl", "jaccl-ring" -> {
                    env.add(new EnvEntry("MLX_JACCL_COORDINATOR", hosts.get(0).ips().get(0) + ":" + in.startingPort()));
                    if (in.backend().equals("jaccl-ring")) {
                        env.add(new EnvEntry("MLX_JACCL_RING", "1"));
                    }
                    List<Object> matrix = new ArrayList<>();
                    for (HostEntry h : hosts) {
                        matrix.add(h.rdma());
                    }
                    files.add(new RankPlan.FileVar("MLX_IBV_DEVICES", MlxJson.write(matrix)));
                }
                default -> throw new IllegalArgumentException("no environment plan for backend " + in.backend());
            }
            if (in.jobToken() != null) {
                env.add(new EnvEntry(JobToken.VARIABLE, in.jobToken()));
            }
            if (in.dumpDir() != null) {
                env.add(new EnvEntry("JDIST_DUMP_DIR", in.dumpDir()));
            }
            ranks.add(new RankPlan(r, hosts.get(r), env, files, dropHostfile));
        }
        // MLX_RANK is exported last, by the bootstrap, after the file variables (§4.1 step 6)
        return new Result(ranks, warnings);
    }

    /** Backend-specific validation (§5), before anything starts. */
    public static void validate(String backend, List<HostEntry> hosts, int connectionsPerIp) {
        switch (backend) {
            case "ring" -> {
                if (connectionsPerIp < 1) {
                    throw CliFailure.usage("--connections-per-ip must be at least 1, got " + connectionsPerIp);
                }
                for (int r = 0; r < hosts.size(); r++) {
                    if (hosts.get(r).ips().isEmpty()) {
                        throw CliFailure.usage("The ring backend requires IPs to be provided instead of hostnames: host "
                                + r + " (" + hosts.get(r).ssh() + ") has none; use IP addresses in --hosts, or a hostfile "
                                + "with \"ips\" for each host");
                    }
                }
            }
            case "nccl" -> requireRankZeroIp(hosts);
            case "jaccl", "jaccl-ring" -> {
                requireRankZeroIp(hosts);
                int n = hosts.size();
                for (int i = 0; i < n; i++) {
                    HostEntry h = hosts.get(i);
                    if (h.rdma().size() != n) {
                        throw CliFailure.usage("Malformed hostfile for jaccl backend: host " + i + " (" + h.ssh() + ") has "
                                + h.rdma().size() + " rdma entries, expected " + n + " (one per rank, null for itself)");
                    }
                    if (h.rdma().get(i) != null) {
                        throw CliFailure.usage("Malformed hostfile for jaccl backend: host " + i + " (" + h.ssh()
                                + ") must have null at rdma[" + i + "] (a host has no link to itself)");
                    }
                }
            }
            case "mpi" -> {
                // nothing: mpirun decides
            }
            default -> throw CliFailure.usage(BACKEND_ERROR + ", not '" + backend + "'");
        }
    }

    private static void requireRankZeroIp(List<HostEntry> hosts) {
        if (hosts.get(0).ips().isEmpty()) {
            throw CliFailure.usage("Rank 0 should have an IP reachable from all other ranks: host 0 ("
                    + hosts.get(0).ssh() + ") has no IP; give it an IP in --hosts or an \"ips\" list in the hostfile");
        }
    }

    /** The ring's address lists (§5.1): a global port sequence over ranks, IPs, connections. */
    public static List<List<String>> ringAddresses(List<HostEntry> hosts, int startingPort, int connectionsPerIp) {
        List<List<String>> out = new ArrayList<>();
        int port = startingPort;
        for (HostEntry h : hosts) {
            List<String> mine = new ArrayList<>();
            for (String ip : h.ips()) {
                for (int c = 0; c < connectionsPerIp; c++) {
                    mine.add(ip + ":" + port);
                    port++;
                }
            }
            out.add(mine);
        }
        return out;
    }

    /** Every entry a rank exports, in order, with the file variables shown as {@code <temp file: CONTENT>} (for --dry-run). */
    public static Map<String, String> describe(RankPlan p) {
        Map<String, String> m = new LinkedHashMap<>();
        for (EnvEntry e : p.env()) {
            m.remove(e.name());
            m.put(e.name(), e.value());
        }
        for (RankPlan.FileVar f : p.files()) {
            m.put(f.name(), "<temp file: " + f.content() + ">");
        }
        m.put("MLX_RANK", Integer.toString(p.rank()));
        return m;
    }
}
