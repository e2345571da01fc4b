package dev.jdist.launch;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.List;

/**
 * The options of {@code jdist launch} (launcher.md §1.2). Integers are kept as text and validated afterwards so
 * the error messages are MLX's. Parsed by {@link LaunchArguments}.
 */
@Command(name = "launch",
        usageHelpWidth = 110,
        sortOptions = false,
        customSynopsis = {"jdist launch [options] [--] COMMAND [ARGS...]", "       jdist launch --print-java | --print-python"},
        description = {
                "Starts COMMAND as one process per rank, locally or over ssh, with the environment the chosen",
                "backend needs (MLX-compatible). COMMAND is a .java source file, a .jar, a main class (with",
                "--class-path) or any command (python3 train.py, ./job.sh). Options may appear after the command;",
                "write -- before the command to pass options to it instead.",
                ""},
        footer = {"",
                "Examples:",
                "  jdist launch -n 4 examples/AllSum.java",
                "  jdist launch --hosts 10.0.0.1,10.0.0.2 -n 2 -- java -jar app.jar",
                "  jdist launch --hostfile hosts.json -- python3 my_mlx_script.py",
                "Exit status: 0 if every rank exited 0; else the status of the first rank that failed; 2 for usage",
                "errors; 128+N when the launcher got signal N. See docs/launching.md."})
public final class LaunchOptions {

    @Option(names = "--hosts", paramLabel = "H1,H2,...", description = "Comma-separated hosts (default: 127.0.0.1). Ignored with --hostfile.")
    public String hosts = "127.0.0.1";

    @Option(names = {"-n", "--repeat-hosts"}, paramLabel = "N", description = "Ranks per --hosts entry, consecutive (default: 1).")
    public String repeatHosts = "1";

    @Option(names = "--hostfile", paramLabel = "FILE", description = "JSON hostfile (MLX format); -n does not repeat its entries.")
    public String hostfile;

    @Option(names = "--backend", paramLabel = "NAME", description = "ring, jaccl, jaccl-ring, nccl or mpi (default: hostfile's, $JDIST_LAUNCH_BACKEND, nccl with CUDA, else ring).")
    public String backend;

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "Environment variable for every rank (repeatable).")
    public List<String> env = new ArrayList<>();

    @Option(names = "--mpi-arg", paramLabel = "ARGS", description = "Extra mpirun arguments, split like a shell (repeatable; mpi backend).")
    public List<String> mpiArg = new ArrayList<>();

    @Option(names = "--connections-per-ip", paramLabel = "C", description = "Ring addresses (ports) per IP (default: 1).")
    public String connectionsPerIp = "1";

    @Option(names = {"-p", "--starting-port"}, paramLabel = "PORT", description = "First ring port; jaccl coordinator port (default: 32323).")
    public String startingPort = "32323";

    @Option(names = "--nccl-port", paramLabel = "PORT", description = "NCCL_PORT (default: 12345).")
    public String ncclPort = "12345";

    @Option(names = "--cwd", paramLabel = "DIR", description = "Working directory of every rank (default: the launcher's, where it exists).")
    public String cwd;

    @Option(names = "--verbose", description = "Print [INFO] lines; also MLX_RING_VERBOSE=1 (ring) and NCCL_DEBUG=INFO (nccl).")
    public boolean verbose;

    @Option(names = "--python", paramLabel = "PATH", description = "Interpreter prepended to the command.")
    public String python;

    @Option(names = "--print-python", description = "Print a Python interpreter path and exit.")
    public boolean printPython;

    @Option(names = "--java", paramLabel = "PATH", description = "java launcher for Java targets (default: the launcher's own).")
    public String java;

    @Option(names = "--print-java", description = "Print the Java runtime path used for Java targets and exit.")
    public boolean printJava;

    @Option(names = {"--class-path", "--classpath"}, paramLabel = "CP", description = "Extra class path; makes COMMAND a main class name.")
    public String classPath;

    @Option(names = "--java-opt", paramLabel = "OPT", description = "One JVM option for Java targets (repeatable).")
    public List<String> javaOpt = new ArrayList<>();

    @Option(names = "--tag-output", description = "Prefix every output line with [RANK].")
    public boolean tagOutput;

    @Option(names = "--timestamp-output", description = "Prefix every output line with the time it arrived.")
    public boolean timestampOutput;

    @Option(names = "--output-dir", paramLabel = "DIR", description = "Also write each rank's output to DIR/rank-R.out and DIR/rank-R.err.")
    public String outputDir;

    @Option(names = "--timeout", paramLabel = "SECONDS", description = "End the job (exit 124) if it runs longer than this.")
    public String timeout;

    @Option(names = "--bind-to", paramLabel = "none|core", description = {"core: pin each rank to one CPU of its host (the rank's "
            + "index among that host's ranks, modulo its CPUs; Linux taskset) so that ranks polling for messages do not "
            + "migrate between CPUs. Default: none."})
    public String bindTo;

    @Option(names = "--dry-run", description = "Print each rank's host, command and environment; start nothing.")
    public boolean dryRun;

    @Option(names = "--mlx-compatible", description = "Do not set JDIST_JOB_TOKEN (lets MLX ranks join a jdist ring).")
    public boolean mlxCompatible;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    public boolean help;

    @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "The program and its arguments.")
    public List<String> command = new ArrayList<>();
}
