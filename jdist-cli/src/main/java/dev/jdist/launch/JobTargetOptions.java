package dev.jdist.launch;

import dev.jdist.Distributed;
import dev.jdist.hosts.HostList;
import dev.jdist.hosts.Hostfile;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where a job's ranks run (docs/reference/launcher.md §1.2): the options {@code jdist launch}, {@code jdist bench} and
 * {@code jdist doctor} share, as a picocli mixin. Numbers are kept as text and converted by the accessors, so every
 * command reports a bad value with MLX's words. {@code order} is the option's place in {@code jdist launch --help}
 * (the one help that lists options unsorted).
 */
public final class JobTargetOptions {

    @Option(names = "--hosts", order = 10, paramLabel = "H1,H2,...",
            description = "Comma-separated hosts (default: 127.0.0.1). Ignored with --hostfile.")
    public String hosts = "127.0.0.1";

    @Option(names = {"-n", "--repeat-hosts"}, order = 20, paramLabel = "N",
            description = "Ranks per --hosts entry, consecutive (default: ${DEFAULT-VALUE}).")
    public String repeatHosts = "1";

    @Option(names = "--hostfile", order = 30, paramLabel = "FILE", description = "JSON hostfile (MLX format); -n does not repeat its entries.")
    public String hostfile;

    @Option(names = "--backend", order = 40, paramLabel = "NAME",
            description = "ring, jaccl, jaccl-ring, nccl or mpi (default: hostfile's, $JDIST_LAUNCH_BACKEND, nccl with CUDA, else ring).")
    public String backend;

    @Option(names = "--connections-per-ip", order = 70, paramLabel = "C", description = "Ring addresses (ports) per IP (default: 1).")
    public String connectionsPerIp = "1";

    @Option(names = {"-p", "--starting-port"}, order = 80, paramLabel = "PORT", description = "First ring port; jaccl coordinator port (default: 32323).")
    public String startingPort = "32323";

    /** Launch's defaults: one rank per host. */
    public JobTargetOptions() {
    }

    /** Launch's defaults, but {@code ranksPerHost} ranks per {@code --hosts} entry unless {@code -n} says otherwise. */
    public static JobTargetOptions withRanksPerHost(int ranksPerHost) {
        JobTargetOptions o = new JobTargetOptions();
        o.repeatHosts = Integer.toString(ranksPerHost);
        return o;
    }

    /** {@code -n}, a whole number >= 1. */
    public int repeat() {
        return OptionValues.positive("--repeat-hosts/-n", repeatHosts);
    }

    /** {@code --connections-per-ip}, a whole number (the ring backend requires >= 1 when it plans). */
    public int connectionsPerIp() {
        return OptionValues.integer("--connections-per-ip", connectionsPerIp);
    }

    /** {@code -p}, a whole number. */
    public int startingPort() {
        return OptionValues.integer("--starting-port/-p", startingPort);
    }

    /**
     * The job's hosts in rank order: the hostfile when {@code --hostfile} is given (with its backend and envs), else
     * the {@code --hosts} list with each entry repeated {@code -n} times (no backend, no envs).
     */
    public Hostfile resolveHosts() {
        if (hostfile != null) {
            return Hostfile.read(hostfile);
        }
        return new Hostfile("", List.of(), HostList.parse(hosts, repeat()));
    }

    /**
     * The backend the job uses, checked: {@code --backend}, else the hostfile's, else {@code $JDIST_LAUNCH_BACKEND},
     * else nccl where it can be loaded, else ring.
     */
    public String chooseBackend(Hostfile resolved, Map<String, String> env) {
        String chosen = backend != null ? backend : defaultBackend(resolved.backend(), env);
        EnvironmentPlan.checkBackend(chosen);
        return chosen;
    }

    private static String defaultBackend(String hostfileBackend, Map<String, String> env) {
        if (hostfileBackend != null && !hostfileBackend.isEmpty()) {
            return hostfileBackend;
        }
        String pinned = env.get("JDIST_LAUNCH_BACKEND");
        if (pinned != null && !pinned.isEmpty()) {
            return pinned;
        }
        try {
            if (Distributed.isAvailable("nccl")) {
                return "nccl";
            }
        } catch (RuntimeException | LinkageError ignored) {
            // no usable nccl backend
        }
        return "ring";
    }

    /** These options as {@code jdist launch} arguments (bench runs its job through launch). */
    public List<String> asLaunchArguments() {
        List<String> args = new ArrayList<>();
        if (hostfile != null) {
            args.addAll(List.of("--hostfile", hostfile));
        } else {
            args.addAll(List.of("--hosts", hosts));
        }
        args.addAll(List.of("-n", repeatHosts));
        if (backend != null) {
            args.addAll(List.of("--backend", backend));
        }
        args.addAll(List.of("--connections-per-ip", connectionsPerIp, "--starting-port", startingPort));
        return args;
    }
}
