package dev.jdist.launch;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.List;

/**
 * The options of {@code jdist launch} (docs/reference/launcher.md §1.2): the job target and rank options it shares with bench and
 * doctor, and its own. Integers are kept as text and validated afterwards so the error messages are MLX's. Parsed by
 * {@link LaunchArguments}; {@code order} fixes where each option stands in {@code --help}.
 */
@Command(name = "launch",
        usageHelpWidth = 110,
        sortOptions = false,
        customSynopsis = {"jdist launch [options] [--] COMMAND [ARGS...]", "       jdist launch --print-java | --print-python"},
        description = {
                "Starts COMMAND as one process per rank, locally, over ssh or with Slurm's srun, with the environment",
                "the chosen backend needs (MLX-compatible). COMMAND is a .java source file, a .jar, a main class (with",
                "--class-path) or any command (python3 train.py, ./job.sh). Options may appear after the command;",
                "write -- before the command to pass options to it instead.",
                ""},
        footer = {"",
                "Examples:",
                "  jdist launch -n 4 examples/AllSum.java",
                "  jdist launch --hosts 10.0.0.1,10.0.0.2 -n 2 -- java -jar app.jar",
                "  jdist launch --hostfile hosts.json -- python3 my_mlx_script.py",
                "  jdist launch examples/AllSum.java      (in an sbatch script: one rank per Slurm task, placed by srun)",
                "Exit status: 0 if every rank exited 0; else the status of the first rank that failed; 2 for usage",
                "errors; 128+N when the launcher got signal N. See docs/launching.md."})
public final class LaunchOptions {

    /** --hosts, -n, --hostfile, --backend, --connections-per-ip, -p (shared with bench and doctor). */
    @Mixin
    public JobTargetOptions target = new JobTargetOptions();

    /** --env, --bind-to (shared with bench). */
    @Mixin
    public RankOptions ranks = new RankOptions();

    @Option(names = "--launcher", order = 45, paramLabel = "auto|ssh|srun|local", description = {"How ranks are started: ssh "
            + "(the host list: 127.0.0.1 entries locally, others over ssh), srun (Slurm places them: -n tasks, --hosts nodes; "
            + "ranks meet through the rendezvous), local (every rank on this machine, whatever the host entries). Default auto: "
            + "srun inside a Slurm allocation when no --hosts/--hostfile is given, else ssh."})
    public String launcher;

    @Option(names = "--mpi-arg", order = 60, paramLabel = "ARGS", description = "Extra mpirun arguments, split like a shell (repeatable; mpi backend).")
    public List<String> mpiArg = new ArrayList<>();

    @Option(names = "--nccl-port", order = 90, paramLabel = "PORT", description = "NCCL_PORT (default: 12345).")
    public String ncclPort = "12345";

    @Option(names = "--cwd", order = 100, paramLabel = "DIR", description = "Working directory of every rank (default: the launcher's, where it exists).")
    public String cwd;

    @Option(names = "--verbose", order = 110, description = "Print [INFO] lines; also MLX_RING_VERBOSE=1 (ring) and NCCL_DEBUG=INFO (nccl).")
    public boolean verbose;

    @Option(names = "--python", order = 120, paramLabel = "PATH", description = "Interpreter prepended to the command.")
    public String python;

    @Option(names = "--print-python", order = 130, description = "Print a Python interpreter path and exit.")
    public boolean printPython;

    @Option(names = "--java", order = 140, paramLabel = "PATH", description = "java launcher for Java targets (default: the launcher's own).")
    public String java;

    @Option(names = "--print-java", order = 150, description = "Print the Java runtime path used for Java targets and exit.")
    public boolean printJava;

    @Option(names = {"--class-path", "--classpath"}, order = 160, paramLabel = "CP", description = "Extra class path; makes COMMAND a main class name.")
    public String classPath;

    @Option(names = "--java-opt", order = 170, paramLabel = "OPT", description = "One JVM option for Java targets (repeatable).")
    public List<String> javaOpt = new ArrayList<>();

    @Option(names = "--tag-output", order = 180, description = "Prefix every output line with [RANK].")
    public boolean tagOutput;

    @Option(names = "--timestamp-output", order = 190, description = "Prefix every output line with the time it arrived.")
    public boolean timestampOutput;

    @Option(names = "--output-dir", order = 200, paramLabel = "DIR", description = "Also write each rank's output to DIR/rank-R.out and DIR/rank-R.err.")
    public String outputDir;

    @Option(names = "--timeout", order = 210, paramLabel = "SECONDS", description = "End the job (exit 124) if it runs longer than this.")
    public String timeout;

    @Option(names = "--max-restarts", order = 212, paramLabel = "K", description = {"When a rank fails, end every rank and "
            + "start the whole job again, at most K times (default 0: the job ends). Each start is a new rendezvous round with a "
            + "new job token; ranks read the restart number in JDIST_RESTART (0, 1, ...). Not with --backend mpi."})
    public String maxRestarts;

    @Option(names = "--max-failures-per-host", order = 214, paramLabel = "M", description = {"With --max-restarts: a host "
            + "whose rank failed first M times gets no ranks in later starts (they move to the other hosts); with no host "
            + "left the job ends. Not with --launcher srun."})
    public String maxFailuresPerHost;

    @Option(names = "--dry-run", order = 230, description = "Print each rank's host, command and environment; start nothing.")
    public boolean dryRun;

    @Option(names = "--mlx-compatible", order = 240, description = "Do not set JDIST_JOB_TOKEN (lets MLX ranks join a jdist ring).")
    public boolean mlxCompatible;

    @Option(names = {"-h", "--help"}, order = 250, usageHelp = true, description = "Show this help and exit.")
    public boolean help;

    @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "The program and its arguments.")
    public List<String> command = new ArrayList<>();
}
