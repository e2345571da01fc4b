package dev.jdist.cli;

import dev.jdist.config.ClusterConfigurator;
import dev.jdist.config.ConfigOptions;
import dev.jdist.config.HostPlatform;
import dev.jdist.config.LinuxPlatform;
import dev.jdist.config.MacOsPlatform;
import dev.jdist.config.RemoteShell;
import dev.jdist.config.SshRemoteShell;
import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.HostList;
import dev.jdist.hosts.Hostfile;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jdist config}: discover, check and configure a cluster, and write its hostfile ({@code docs/reference/distributed-config.md}). */
@Command(name = "config",
        description = {"Check ssh access to the hosts, read their Thunderbolt wiring (or their Ethernet addresses),",
                "check it forms a mesh or a ring, plan an IP subnet per cable, set the interfaces up (or print",
                "the commands), and write a hostfile for `jdist launch` / `mlx.launch`."},
        sortOptions = false)
public final class ConfigCommand implements Callable<Integer>, MlxCounterpart {

    @Option(names = "--hosts", paramLabel = "LIST", defaultValue = "127.0.0.1",
            description = "Comma-separated ssh hosts (default: ${DEFAULT-VALUE}).")
    String hosts;

    @Option(names = "--hostfile", paramLabel = "PATH",
            description = "Read the hosts (ssh and ips) from a hostfile instead; takes precedence over --hosts.")
    Path hostfile;

    @Option(names = "--over", paramLabel = "thunderbolt|ethernet", defaultValue = "thunderbolt",
            description = "What to configure (default: ${DEFAULT-VALUE}).")
    String over;

    @Option(names = "--backend", paramLabel = "ring|jaccl|jaccl-ring",
            description = "Thunderbolt only: require this backend (default: the best the wiring and RDMA allow).")
    String backend;

    @Option(names = "--auto-setup", negatable = true, arity = "0",
            description = "Run the interface commands over ssh (needs passwordless sudo); the last of --[no-]auto-setup wins.")
    boolean autoSetup;

    @Option(names = "--dot", arity = "0", description = "Thunderbolt only: print the wiring as a GraphViz graph and exit.")
    boolean dot;

    @Option(names = "--output-hostfile", paramLabel = "PATH",
            description = "Write the hostfile there instead of printing it (--output works too).")
    Path output;

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "Copied into the hostfile's envs; repeatable.")
    List<String> envs = new ArrayList<>();

    @Option(names = "--ignore-unreachable", arity = "0", description = "Drop hosts ssh cannot reach instead of failing.")
    boolean ignoreUnreachable;

    @Option(names = "--platform", paramLabel = "macos|linux", defaultValue = "macos",
            description = "The hosts' operating system (default: ${DEFAULT-VALUE}); linux uses ip, sysfs and rdma.")
    String platform;

    @Option(names = "--verbose", arity = "0", description = "Print an INFO line for every step on stderr.")
    boolean verbose;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;

    /** Where the tool talks to hosts and the user; tests replace these. */
    RemoteShell shell = new SshRemoteShell();
    PrintStream out = System.out;
    PrintStream err = System.err;
    InputStream in = System.in;

    /** argparse-style parsing: unambiguous prefixes of long options, and the last occurrence of an option wins. */
    public static CommandLine configure(CommandLine config) {
        return config.setAbbreviatedOptionsAllowed(true).setOverwrittenOptionsAllowed(true);
    }

    @Override
    public String usageLine(CommandLine self) {
        return FailureHandler.synopsisLine(self);
    }

    @Override
    public Integer call() {
        choice("--over", over, "thunderbolt", "ethernet");
        if (backend != null) {
            choice("--backend", backend, "ring", "jaccl", "jaccl-ring");
        }
        choice("--platform", platform, "macos", "linux");
        // the launcher's host model, so both commands accept and reject the same --hosts and hostfiles; of a hostfile,
        // config uses the ssh and ips of each host (docs/reference/distributed-config.md §2)
        List<HostEntry> hostList = hostfile != null
                ? Hostfile.read(hostfile.toString()).hosts().stream().map(h -> new HostEntry(h.ssh(), h.ips())).toList()
                : HostList.parse(hosts, 1);
        HostPlatform hostPlatform = platform.equals("linux") ? new LinuxPlatform() : new MacOsPlatform();
        ConfigOptions options = new ConfigOptions(hostList, over, backend, autoSetup, dot, output, envs,
                ignoreUnreachable, hostPlatform);
        ConsoleLog log = new ConsoleLog(err, verbose);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        return new ClusterConfigurator(options, shell, log, out, stdin).run();
    }

    private void choice(String option, String value, String... allowed) {
        if (!List.of(allowed).contains(value)) {
            StringBuilder choices = new StringBuilder();
            for (String a : allowed) {
                choices.append(choices.isEmpty() ? "" : ", ").append('\'').append(a).append('\'');
            }
            throw CliFailure.usage("argument " + option + ": invalid choice: '" + value + "' (choose from " + choices + ")");
        }
    }
}
