package dev.jdist.config;

import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

/**
 * The flow of {@code jdist config} ({@code docs/reference/distributed-config.md} §2): check ssh, collect the wiring, check the
 * topology, choose the backend, plan the addresses, apply or print the commands, write the hostfile. Returns the exit
 * status; never waits on a host without a deadline.
 */
public final class ClusterConfigurator {
    /** Deadline of one auto-setup call (a handful of ifconfig/route commands). */
    static final Duration SETUP_DEADLINE = Duration.ofSeconds(120);

    private final ConfigOptions options;
    private final RemoteShell shell;
    private final RemoteCalls calls;
    private final HostPlatform platform;
    private final ConsoleLog log;
    private final PrintStream out;
    private final BufferedReader in;
    private boolean setupFailed;

    public ClusterConfigurator(ConfigOptions options, RemoteShell shell, ConsoleLog log, PrintStream out, BufferedReader in) {
        this.options = options;
        this.shell = shell;
        this.platform = options.platform();
        this.log = log;
        this.out = out;
        this.in = in;
        this.calls = new RemoteCalls(shell, log);
    }

    /**
     * Configures the cluster and returns the exit status.
     *
     * @throws CliFailure with the ERROR lines to print when the cluster cannot be configured as asked
     */
    public int run() {
        List<HostEntry> hosts = new ArrayList<>(options.hosts());
        log.info("Checking for ssh access for " + hosts.stream().map(HostEntry::ssh).collect(Collectors.joining(", ")));
        List<AccessCheck.Access> access = AccessCheck.check(shell, hosts.stream().map(HostEntry::ssh).toList());
        List<AccessCheck.Access> unreachable = access.stream().filter(a -> !a.reachable()).toList();
        if (!unreachable.isEmpty()) {
            if (!options.ignoreUnreachable()) {
                List<String> lines = new ArrayList<>();
                lines.add("Could not ssh to the following hosts:");
                unreachable.forEach(a -> lines.add("  -  " + a.host()));
                lines.add("");
                lines.add("Maybe they are not set-up for password-less ssh?");
                unreachable.forEach(a -> lines.add(a.host() + ": " + a.reason()));
                lines.add("Check each with `ssh -o BatchMode=yes HOST echo success`, or pass --ignore-unreachable"
                        + " to configure the others.");
                throw CliFailure.of(1, lines);
            }
            log.warn("Ignoring hosts that ssh cannot reach: " + unreachable.stream()
                    .map(a -> a.host() + " (" + a.reason() + ")").collect(Collectors.joining(", ")));
            List<HostEntry> kept = new ArrayList<>();
            List<AccessCheck.Access> keptAccess = new ArrayList<>();
            for (int i = 0; i < hosts.size(); i++) {
                if (access.get(i).reachable()) {
                    kept.add(hosts.get(i));
                    keptAccess.add(access.get(i));
                }
            }
            hosts = kept;
            access = keptAccess;
            if (hosts.isEmpty()) {
                throw CliFailure.of(1, "No host is left: ssh reached none of them. Set up password-less ssh"
                        + " (ssh-copy-id HOST) and check each with `ssh -o BatchMode=yes HOST echo success`.");
            }
        }
        if (options.over().equals("ethernet")) {
            return ethernet(hosts);
        }
        return thunderbolt(hosts, access);
    }

    private int ethernet(List<HostEntry> hosts) {
        if (options.dot() || options.backend() != null || options.autoSetup()) {
            log.warn("--dot, --backend and --auto-setup only apply to --over thunderbolt; ignoring them");
        }
        log.info("Preparing an ethernet hostfile");
        List<HostEntry> withIps = discoverIps(hosts);
        writeHostfile(Hostfiles.ethernet(withIps, options.envs()));
        return 0;
    }

    private List<HostEntry> discoverIps(List<HostEntry> hosts) {
        List<HostEntry> result = new ArrayList<>();
        for (HostEntry h : hosts) {
            log.info("Getting the ip from " + h.ssh());
            Optional<String> ip = platform.primaryIp(calls, h.ssh());
            if (ip.isPresent()) {
                result.add(h.withIp(ip.get()));
            } else {
                log.warn("Could not extract ip for " + h.ssh() + " ("
                        + (platform instanceof MacOsPlatform ? "`ipconfig getifaddr en0` and `en1` printed nothing"
                                : "no route source and no global IPv4 address") + "); add its address to the hostfile by hand");
                result.add(h);
            }
        }
        return result;
    }

    private int thunderbolt(List<HostEntry> hosts, List<AccessCheck.Access> access) {
        log.info("Preparing for communication over thunderbolt");
        List<String> names = hosts.stream().map(HostEntry::ssh).toList();
        ThunderboltTopology topology = new ThunderboltTopology(platform.wiring(calls, names));
        if (options.dot()) {
            out.print(DotWriter.write(topology));
            out.flush();
            return 0;
        }
        IpPlan plan = IpPlan.of(topology);
        WiringDiagnostics diagnostics = new WiringDiagnostics(topology);
        diagnostics.reportCables(log);

        List<RingSearch.Ring> rings = RingSearch.rings(topology.connectivity());
        boolean mesh = topology.isFullMesh();
        boolean fullRing = RingSearch.isFullRing(rings, topology.size());
        Hostfile hostfile;
        String backend = options.backend();
        if (backend == null) {
            List<RdmaReport> rdma = rdmaCheck(names, topology, false);
            boolean allRdma = rdma.stream().allMatch(RdmaReport::enabled);
            if (!fullRing && !mesh) {
                List<String> lines = new ArrayList<>(List.of("Neither thunderbolt mesh nor ring found.",
                        "Perhaps run with --dot to generate a plot of the connectivity."));
                lines.addAll(diagnostics.meshAdvice());
                throw CliFailure.of(1, lines);
            } else if (allRdma && mesh) {
                hostfile = jaccl(hosts, plan, rdma);
            } else if (allRdma && fullRing) {
                hostfile = jacclRing(hosts, plan, rings.getFirst(), rdma);
            } else if (fullRing) {
                hostfile = Hostfiles.ring(hosts, plan, rings.getFirst(), options.envs());
            } else {
                throw CliFailure.of(1, "RDMA is not available and ring is not found.",
                        "Perhaps run with --dot to generate a plot of the connectivity.");
            }
        } else {
            switch (backend) {
                case "ring" -> {
                    requireRing(topology, rings, diagnostics);
                    hostfile = Hostfiles.ring(hosts, plan, rings.getFirst(), options.envs());
                }
                case "jaccl" -> {
                    requireMesh(topology, diagnostics);
                    hostfile = jaccl(hosts, plan, rdmaCheck(names, topology, true));
                }
                default -> {
                    requireRing(topology, rings, diagnostics);
                    hostfile = jacclRing(hosts, plan, rings.getFirst(), rdmaCheck(names, topology, true));
                }
            }
        }
        applyPlan(names, access, plan);
        writeHostfile(hostfile);
        if (setupFailed) {
            log.error("The hostfile was written, but the interface setup failed on some hosts (see above);"
                    + " fix them and run the commands again, or rerun jdist config.");
            return 1;
        }
        return 0;
    }

    private Hostfile jaccl(List<HostEntry> hosts, IpPlan plan, List<RdmaReport> rdma) {
        List<HostEntry> withIps = discoverIps(hosts);
        return Hostfiles.jaccl(withIps, plan, device(hosts, rdma), options.envs());
    }

    private Hostfile jacclRing(List<HostEntry> hosts, IpPlan plan, RingSearch.Ring ring, List<RdmaReport> rdma) {
        List<HostEntry> withIps = discoverIps(hosts);
        return Hostfiles.jacclRing(withIps, plan, ring, device(hosts, rdma), options.envs());
    }

    private BiFunction<Integer, String, String> device(List<HostEntry> hosts, List<RdmaReport> rdma) {
        return (host, iface) -> {
            String dev = platform.rdmaDevice(rdma.get(host), iface);
            if (dev == null) {
                throw CliFailure.of(1, "No RDMA device of " + hosts.get(host).ssh() + " sits on " + iface
                        + " (it has " + String.join(", ", rdma.get(host).devices()) + ")", platform.rdmaHelp());
            }
            return dev;
        };
    }

    private void requireMesh(ThunderboltTopology topology, WiringDiagnostics diagnostics) {
        Optional<int[]> missing = topology.firstMissingPair();
        if (missing.isPresent()) {
            List<String> lines = new ArrayList<>();
            lines.add("Incomplete mesh, " + topology.name(missing.get()[0]) + " is not connected to "
                    + topology.name(missing.get()[1]));
            lines.add("");
            lines.add("Try passing --dot to visualize the connectivity");
            lines.addAll(diagnostics.meshAdvice());
            throw CliFailure.of(1, lines);
        }
    }

    private void requireRing(ThunderboltTopology topology, List<RingSearch.Ring> rings, WiringDiagnostics diagnostics) {
        if (!RingSearch.isFullRing(rings, topology.size())) {
            List<String> lines = new ArrayList<>(List.of("Could not find a full ring.", "",
                    "Try passing --dot to visualize the connectivity"));
            if (!rings.isEmpty()) {
                lines.add("Rings found:");
                for (RingSearch.Ring r : rings) {
                    lines.add(" - " + r.cycle().stream().map(topology::name).collect(Collectors.joining(",")));
                }
            }
            lines.addAll(diagnostics.miswiring());
            throw CliFailure.of(1, lines);
        }
    }

    /** §6.4: every host's RDMA devices; in strict mode a host without fails the run. */
    private List<RdmaReport> rdmaCheck(List<String> names, ThunderboltTopology topology, boolean strict) {
        List<RdmaReport> reports = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String host = names.get(i);
            log.info("Checking that " + host + " supports RDMA");
            RdmaReport r = platform.rdma(calls, host);
            reports.add(r);
            if (!r.enabled()) {
                lines.add(host + " does not seem to have RDMA enabled");
                WiringDiagnostics.thunderbolt4Note(topology, i).ifPresent(lines::add);
            }
        }
        if (!lines.isEmpty()) {
            lines.add("");
            lines.add("Some of the hosts don't have RDMA enabled or they don't support RDMA.");
            lines.add("");
            lines.add(platform.rdmaHelp());
            if (strict) {
                throw CliFailure.of(1, lines);
            }
            lines.forEach(log::warn);
        }
        return reports;
    }

    /** §9: run the commands over ssh (--auto-setup and passwordless sudo everywhere) or print them host by host. */
    private void applyPlan(List<String> names, List<AccessCheck.Access> access, IpPlan plan) {
        boolean automatic = options.autoSetup();
        if (automatic) {
            List<String> noSudo = access.stream().filter(a -> !a.passwordlessSudo()).map(AccessCheck.Access::host).toList();
            if (!noSudo.isEmpty()) {
                log.warn("Automatic setup requested but the following hosts do not have passwordless sudo");
                noSudo.forEach(h -> log.warn(" -  " + h));
                automatic = false;
            }
        }
        for (int i = 0; i < names.size(); i++) {
            String host = names.get(i);
            List<String> commands = platform.setupCommands(i, plan);
            if (automatic) {
                out.println("Running auto setup for " + host);
                String joined = String.join(" ; ", commands);
                log.info("Running " + String.join(" ", shell.commandLine(host, List.of(joined))));
                RemoteShell.Result r = shell.run(host, List.of(joined), SETUP_DEADLINE);
                out.print(r.stdout());
                out.flush();
                log.raw(r.stderr());
                if (!r.ok()) {
                    setupFailed = true;
                    log.error("Auto setup failed on " + host + (r.timedOut() ? " (no answer within "
                            + SETUP_DEADLINE.toSeconds() + " s)" : " with exit status " + r.exitCode())
                            + "; run the commands there by hand: " + joined);
                }
                out.println();
            } else {
                String title = "Setup for " + host;
                out.println(title);
                out.println("=".repeat(title.length()));
                commands.forEach(out::println);
                out.println();
                out.print("Enter to continue");
                out.flush();
                try {
                    in.readLine(); // end-of-file counts as Enter
                } catch (IOException e) {
                    // treat like end-of-file
                }
                out.println();
            }
        }
        out.flush();
    }

    private void writeHostfile(Hostfile doc) {
        String json = doc.toJson();
        Path path = options.output();
        if (path == null) {
            out.println("Hostfile");
            out.println("========");
            out.println(json);
            out.flush();
            return;
        }
        try {
            Files.writeString(path, json);
        } catch (IOException e) {
            throw CliFailure.of(1, "Could not write the hostfile to " + path + " (" + e + "); check that the folder exists"
                    + " and is writable, or choose another --output-hostfile");
        }
        log.info("Wrote the hostfile to " + path);
    }
}
