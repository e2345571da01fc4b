package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** {@code jdist launch} from arguments to exit status, in the order of launcher.md §1.5. */
public final class Launcher {

    private final PrintStream out;
    private final PrintStream err;
    private final InputStream in;
    private final Map<String, String> env;
    private final boolean handleSignals;

    /**
     * @param handleSignals install SIGINT/SIGTERM/SIGHUP handlers and a shutdown hook (only in the CLI process,
     *                      never in a test JVM)
     */
    public Launcher(PrintStream out, PrintStream err, InputStream in, Map<String, String> env, boolean handleSignals) {
        this.out = out;
        this.err = err;
        this.in = in;
        this.env = env;
        this.handleSignals = handleSignals;
    }

    /**
     * Runs the job and returns the launcher's exit status.
     *
     * @throws CliFailure for a usage error (before anything starts) or when the job cannot be started
     */
    public int run(List<String> args) {
        try {
            return launch(args);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 130;
        }
    }

    private int launch(List<String> args) throws InterruptedException {
        LaunchArguments.Parsed p = LaunchArguments.parse(args);
        LaunchOptions o = p.options();
        if (p.help()) {
            LaunchArguments.printHelp(out);
            out.flush();
            return 0;
        }
        if (o.printJava || o.printPython) {
            if (o.printJava) {
                out.println(CommandResolver.javaPath(o.java));
            }
            if (o.printPython) {
                String py = o.python;
                if (py == null) {
                    Optional<Path> found = Executables.onPath("python3").or(() -> Executables.onPath("python"));
                    if (found.isEmpty()) {
                        out.flush();
                        throw CliFailure.of(1, "no python3 or python on PATH; install Python or pass --python PATH");
                    }
                    py = found.get().toString();
                }
                out.println(py);
            }
            out.flush();
            return 0;
        }
        List<String> command = p.command();
        List<String> argv = CommandResolver.resolve(command, o.python, o.java, o.classPath, o.javaOpt,
                CommandResolver.jdistClassPath());

        Hostfile hosts = o.target.resolveHosts();
        String backend = o.target.chooseBackend(hosts, env);

        ConsoleLog log = new ConsoleLog(err, o.verbose);
        TerminalSize term = TerminalSize.detect(env);
        String token = o.mlxCompatible || backend.equals("mpi") ? null : newJobToken();
        EnvironmentPlan.Inputs inputs = new EnvironmentPlan.Inputs(backend, hosts.hosts(), hosts.envs(), o.ranks.env,
                term.columns(), term.lines(), o.verbose, p.repeat(), p.connectionsPerIp(), p.startingPort(), p.ncclPort(), token);

        if (backend.equals("mpi")) {
            return runMpi(inputs, o, argv, log);
        }
        EnvironmentPlan.Result plan = EnvironmentPlan.plan(inputs);
        plan.warnings().forEach(log::warn);
        log.info("Running " + ShellQuote.join(argv));

        String cwd = o.cwd != null ? o.cwd : System.getProperty("user.dir");
        boolean bind = o.ranks.bindToCore();
        Map<String, Integer> ranksOnHost = new HashMap<>();
        Map<Integer, Integer> cpuSlots = new HashMap<>();
        List<JobSupervisor.RankStart> starts = new ArrayList<>();
        for (RankPlan rp : plan.ranks()) {
            int slot = ranksOnHost.merge(rp.host().ssh(), 1, Integer::sum) - 1;
            if (bind) cpuSlots.put(rp.rank(), slot);
            String boot = Bootstrap.script(rp, argv, cwd, o.cwd != null, !rp.host().isLocal(), bind ? slot : -1);
            starts.add(new JobSupervisor.RankStart(rp.rank(), rp.host(), boot,
                    rp.dropInheritedHostfile() ? List.of("MLX_HOSTFILE") : List.of()));
        }
        if (o.dryRun) {
            printDryRun(plan, argv, cwd, o.cwd != null, cpuSlots);
            return 0;
        }
        OutputSink sink;
        try {
            sink = new OutputSink(out, err, o.tagOutput, o.timestampOutput, o.outputDir == null ? null : Path.of(o.outputDir));
        } catch (IOException e) {
            throw CliFailure.usage("--output-dir " + o.outputDir + ": cannot create it (" + e.getMessage() + ")");
        }
        String ssh = Executables.ssh();
        JobSupervisor supervisor = new JobSupervisor(log, sink, ssh, in, p.timeoutSeconds());
        if (handleSignals) {
            installSignals(supervisor::signal);
            Runtime.getRuntime().addShutdownHook(new Thread(supervisor::emergencyStop, "jdist-launch-stop"));
        }
        return supervisor.run(starts);
    }

    private static String newJobToken() {
        byte[] b = new byte[16];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private void printDryRun(EnvironmentPlan.Result plan, List<String> argv, String cwd, boolean cwdGiven,
                             Map<Integer, Integer> cpuSlots) {
        out.println("# dry run: nothing is started");
        for (RankPlan rp : plan.ranks()) {
            HostEntry h = rp.host();
            out.println("rank " + rp.rank() + " on " + h.ssh() + (h.isLocal() ? " (local)" : " (ssh)"));
            out.println("  cwd: " + cwd + (cwdGiven ? "" : " (if it exists there)"));
            out.println("  command: " + ShellQuote.join(argv));
            if (cpuSlots.containsKey(rp.rank())) {
                out.println("  cpu: " + cpuSlots.get(rp.rank()) + " modulo the host's CPU count (taskset)");
            }
            for (var e : EnvironmentPlan.describe(rp).entrySet()) {
                out.println("  env: " + e.getKey() + "=" + e.getValue());
            }
        }
        out.flush();
    }

    private int runMpi(EnvironmentPlan.Inputs inputs, LaunchOptions o, List<String> argv, ConsoleLog log) throws InterruptedException {
        Path mpirun = Executables.onPath("mpirun").orElseThrow(() -> CliFailure.of(1,
                "mpirun not found on PATH (" + System.getenv("PATH") + "); install Open MPI or put its bin directory on PATH"));
        List<EnvEntry> entries = new ArrayList<>(MpiLaunch.discover(mpirun));
        entries.addAll(EnvironmentPlan.commonEntries(inputs, false, new ArrayList<>()));
        List<String> words = MpiLaunch.mpiArgWords(o.mpiArg);
        boolean ompi4 = MpiLaunch.isOpenMpi4(Executables.output(List.of(mpirun.toString(), "--version"), 10).orElse(""));
        Path hostfile;
        try {
            hostfile = Files.createTempFile("jdist-mpi-hosts-", ".txt");
            Files.writeString(hostfile, MpiLaunch.hostfile(inputs.hosts()));
        } catch (IOException e) {
            throw CliFailure.of(1, "cannot write the temporary MPI hostfile: " + e.getMessage());
        }
        try {
            List<String> cmd = MpiLaunch.argv(mpirun.toString(), ompi4, hostfile.toString(), o.cwd, entries, words, argv);
            log.info("Using '" + mpirun + "'");
            log.info("Running " + String.join(" ", cmd));
            if (o.dryRun) {
                out.println("# dry run: nothing is started");
                out.println("mpirun: " + ShellQuote.join(cmd));
                out.print("hostfile " + hostfile + ":\n" + MpiLaunch.hostfile(inputs.hosts()));
                out.flush();
                return 0;
            }
            Process proc;
            try {
                proc = new ProcessBuilder(cmd).inheritIO().start();
            } catch (IOException e) {
                throw CliFailure.of(1, "cannot start " + mpirun + ": " + e.getMessage());
            }
            int[] signal = {0};
            if (handleSignals) {
                installSignals(sig -> {
                    synchronized (signal) {
                        if (signal[0] == 0) {
                            signal[0] = sig;
                        }
                    }
                    String name = sig == 2 ? "INT" : sig == 15 ? "TERM" : "HUP";
                    Executables.output(List.of("kill", "-s", name, Long.toString(proc.pid())), 5);
                });
                Runtime.getRuntime().addShutdownHook(new Thread(proc::destroyForcibly, "jdist-mpirun-stop"));
            }
            while (!proc.waitFor(200, TimeUnit.MILLISECONDS)) {
                synchronized (signal) {
                    if (signal[0] != 0) {
                        break;
                    }
                }
            }
            int sig;
            synchronized (signal) {
                sig = signal[0];
            }
            if (sig != 0) {
                if (!proc.waitFor(10, TimeUnit.SECONDS)) {
                    proc.destroyForcibly();
                    proc.waitFor(5, TimeUnit.SECONDS);
                }
                return 128 + sig;
            }
            return proc.exitValue();
        } finally {
            try {
                Files.deleteIfExists(hostfile);
            } catch (IOException ignored) {
                // best effort
            }
        }
    }

    /** Routes SIGINT (2), SIGTERM (15) and SIGHUP (1) to {@code handler} instead of ending the JVM. */
    @SuppressWarnings("restriction")
    private static void installSignals(java.util.function.IntConsumer handler) {
        for (var s : List.of(Map.entry("INT", 2), Map.entry("TERM", 15), Map.entry("HUP", 1))) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(s.getKey()), sig -> handler.accept(s.getValue()));
            } catch (IllegalArgumentException | UnsupportedOperationException ignored) {
                // signal not available here (e.g. -Xrs): the shutdown hook still stops the ranks
            }
        }
    }
}
