package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses {@code jdist launch}'s arguments with MLX's rules (docs/reference/launcher.md §1.3): options and command tokens
 * intermixed, unknown options belong to the command, unambiguous long-option prefixes, last value wins,
 * the first {@code --} ends option scanning. A small normalising pass applies the argparse-specific rules
 * (prefixes, {@code --} placement, attached short values); picocli then binds the normalised tokens to
 * {@link LaunchOptions}.
 */
public final class LaunchArguments {

    public static final String USAGE = "usage: jdist launch [-h] [--hosts HOSTS] [-n N] [--hostfile FILE] [--backend NAME] "
            + "[--launcher auto|ssh|srun|local] [--env NAME=VALUE] [--mpi-arg ARGS] [--connections-per-ip C] [-p PORT] [--nccl-port PORT] [--cwd DIR] "
            + "[--verbose] [--python PATH] [--print-python] [--java PATH] [--print-java] [--class-path CP] [--java-opt OPT] "
            + "[--tag-output] [--timestamp-output] [--output-dir DIR] [--timeout SECONDS] [--max-restarts K] [--max-failures-per-host M] [--dry-run] [--mlx-compatible] "
            + "[--] COMMAND [ARGS...]";

    private static final String NEVER = "\u0000jdist-no-end-of-options\u0000";

    /**
     * The parsed command line. {@code command} is the final command (a leading {@code --} already removed);
     * {@code given} holds the long name of every option the command line set (defaults aside), e.g. {@code --hosts}.
     */
    public record Parsed(LaunchOptions options, List<String> command, boolean help,
                         int repeat, int connectionsPerIp, int startingPort, int ncclPort, Double timeoutSeconds,
                         Set<String> given, int maxRestarts, Integer maxFailuresPerHost) {
        public Parsed {
            given = Set.copyOf(given);
        }
    }

    private LaunchArguments() {
    }

    /** A fresh picocli command line for {@link LaunchOptions}, configured for the normalised tokens. */
    public static CommandLine commandLine(LaunchOptions options) {
        CommandLine cl = new CommandLine(options);
        cl.setUnmatchedOptionsArePositionalParams(true);
        cl.setOverwrittenOptionsAllowed(true);
        cl.setAllowOptionsAsOptionParameters(true);
        cl.setPosixClusteredShortOptionsAllowed(false);
        cl.setAbbreviatedOptionsAllowed(false);
        cl.setExpandAtFiles(false);
        cl.setEndOfOptionsDelimiter(NEVER);
        cl.setStopAtPositional(false);
        cl.setCaseInsensitiveEnumValuesAllowed(false);
        return cl;
    }

    public static void printHelp(PrintStream out) {
        commandLine(new LaunchOptions()).usage(out);
    }

    public static Parsed parse(List<String> args) {
        LaunchOptions options = new LaunchOptions();
        CommandLine cl = commandLine(options);
        CommandSpec spec = cl.getCommandSpec();

        Map<String, OptionSpec> longNames = new LinkedHashMap<>();
        Map<String, OptionSpec> byName = new LinkedHashMap<>();
        for (OptionSpec o : spec.options()) {
            for (String n : o.names()) {
                byName.put(n, o);
                if (n.startsWith("--")) {
                    longNames.put(n, o);
                }
            }
        }

        List<String> head = new ArrayList<>();
        List<String> tail = new ArrayList<>();
        boolean sawDashDash = false;
        boolean help = false;
        for (int i = 0; i < args.size(); i++) {
            String t = args.get(i);
            if (t.equals("--")) {
                sawDashDash = true;
                tail.addAll(args.subList(i + 1, args.size()));
                break;
            }
            if (t.startsWith("--") && t.length() > 2) {
                int eq = t.indexOf('=');
                String name = eq < 0 ? t : t.substring(0, eq);
                OptionSpec o = byName.get(name);
                if (o == null) {
                    Set<OptionSpec> matches = new LinkedHashSet<>();
                    List<String> matchedNames = new ArrayList<>();
                    for (var e : longNames.entrySet()) {
                        if (e.getKey().startsWith(name)) {
                            matches.add(e.getValue());
                            matchedNames.add(e.getKey());
                        }
                    }
                    if (matches.size() > 1) {
                        throw CliFailure.usage("ambiguous option: " + name + " could match " + String.join(", ", matchedNames)
                                + "; write the option name in full");
                    }
                    if (matches.size() == 1) {
                        o = matches.iterator().next();
                    }
                }
                if (o == null) {
                    head.add(t); // an unknown option is a command token
                    continue;
                }
                String canonical = o.longestName();
                if (o.usageHelp()) {
                    if (eq >= 0) {
                        throw CliFailure.usage("argument -h/--help: ignored explicit argument '" + t.substring(eq + 1) + "'");
                    }
                    help = true;
                    continue;
                }
                if (isFlag(o)) {
                    if (eq >= 0) {
                        throw CliFailure.usage("argument " + canonical + ": ignored explicit argument '" + t.substring(eq + 1)
                                + "' (" + canonical + " is a flag and takes no value)");
                    }
                    head.add(canonical);
                    continue;
                }
                head.add(canonical);
                if (eq >= 0) {
                    head.add(t.substring(eq + 1));
                } else {
                    if (i + 1 >= args.size()) {
                        throw CliFailure.usage("argument " + displayName(o) + ": expected one argument");
                    }
                    head.add(args.get(++i)); // the next token is always the value, even if it starts with '-'
                }
                continue;
            }
            if (t.equals("-h")) {
                help = true;
                continue;
            }
            if (t.startsWith("-n") || t.startsWith("-p")) {
                OptionSpec o = byName.get(t.substring(0, 2));
                head.add(o.longestName());
                if (t.length() > 2) {
                    String v = t.substring(2);
                    head.add(v.startsWith("=") ? v.substring(1) : v);
                } else {
                    if (i + 1 >= args.size()) {
                        throw CliFailure.usage("argument " + displayName(o) + ": expected one argument");
                    }
                    head.add(args.get(++i));
                }
                continue;
            }
            head.add(t); // a command token (including unknown single-dash options such as -v, -m)
        }

        Set<String> given = new LinkedHashSet<>();
        try {
            CommandLine.ParseResult result = cl.parseArgs(head.toArray(String[]::new));
            result.matchedOptions().forEach(o -> given.add(o.longestName()));
        } catch (CommandLine.ParameterException e) {
            throw CliFailure.usage(e.getMessage());
        }
        List<String> command = new ArrayList<>(options.command);
        if (sawDashDash) {
            if (!command.isEmpty()) {
                command.add("--");
            }
            command.addAll(tail);
        }
        if (help) {
            return new Parsed(options, command, true, 1, 1, 32323, 12345, null, given, 0, null);
        }
        int repeat = options.target.repeat();
        int cpi = options.target.connectionsPerIp();
        int port = options.target.startingPort();
        int ncclPort = OptionValues.integer("--nccl-port", options.ncclPort);
        Double timeout = null;
        if (options.timeout != null) {
            try {
                timeout = Double.parseDouble(options.timeout.trim());
            } catch (NumberFormatException e) {
                timeout = Double.NaN;
            }
            if (timeout.isNaN() || timeout <= 0 || timeout.isInfinite()) {
                throw CliFailure.usage("argument --timeout: invalid positive number of seconds: '" + options.timeout + "'");
            }
        }
        int maxRestarts = options.maxRestarts == null ? 0 : OptionValues.integer("--max-restarts", options.maxRestarts);
        if (maxRestarts < 0) {
            throw CliFailure.usage("argument --max-restarts: must be 0 or more (how many times the job may start again), got " + maxRestarts);
        }
        Integer perHost = null;
        if (options.maxFailuresPerHost != null) {
            perHost = OptionValues.integer("--max-failures-per-host", options.maxFailuresPerHost);
            if (perHost < 1) {
                throw CliFailure.usage("argument --max-failures-per-host: must be 1 or more (failures after which a host gets no ranks), got " + perHost);
            }
            if (maxRestarts == 0) {
                throw CliFailure.usage("--max-failures-per-host " + perHost + " needs --max-restarts K (K >= 1): without restarts no host fails twice");
            }
        }
        return new Parsed(options, command, false, repeat, cpi, port, ncclPort, timeout, given, maxRestarts, perHost);
    }

    private static boolean isFlag(OptionSpec o) {
        Class<?> t = o.type();
        return t == boolean.class || t == Boolean.class;
    }

    private static String displayName(OptionSpec o) {
        String[] names = o.names();
        if (names.length == 2 && !names[0].startsWith("--")) {
            return names[1] + "/" + names[0];
        }
        return String.join("/", names);
    }
}
