package dev.jdist.launch;

import dev.jdist.Distributed;
import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;
import dev.jdist.mpi.MpiBackend;
import dev.jdist.spi.JobToken;

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

/** {@code jdist launch} from arguments to exit status, in the order of docs/reference/launcher.md §1.5. */
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
        List<String> javaOpts = new ArrayList<>();
        if (CommandResolver.isJavaTarget(command, o.python, o.classPath)) {
            javaOpts.addAll(CommandResolver.environmentJavaOptions(env));
        }
        javaOpts.addAll(o.javaOpt);
        List<String> argv = CommandResolver.resolve(command, o.python, o.java, o.classPath, javaOpts,
                CommandResolver.jdistClassPath());

        Hostfile hosts = o.target.resolveHosts();
        String backend = o.target.chooseBackend(hosts, env);
        Placement.Choice placement = Placement.choose(o.launcher, p.given(), backend, env, Executables.onPath("srun").isPresent());
        o.ranks.bindToCore(); // checks --bind-to before anything starts

        ConsoleLog log = new ConsoleLog(err, o.verbose);
        if (placement.why() != null) {
            if (placement.placement() == Placement.SRUN) {
                log.info(placement.why());
            } else {
                log.warn(placement.why());
            }
        }
        TerminalSize term = TerminalSize.detect(env);
        checkRestartOptions(p, backend, placement.placement());
        Restarts restarts = new Restarts(p.maxRestarts(), p.maxFailuresPerHost(), log);
        List<HostEntry> jobHosts = hosts.hosts();
        long jobDeadline = p.timeoutSeconds() == null ? Long.MAX_VALUE : System.nanoTime() + (long) (p.timeoutSeconds() * 1e9);
        for (int round = 0; ; round++) {
            if (round > 0 && System.nanoTime() - jobDeadline >= 0) {
                log.error("job ran longer than --timeout " + o.timeout.trim() + " s; no restart " + round);
                return JobSupervisor.TIMEOUT_STATUS;
            }
            String token = o.mlxCompatible ? null : newJobToken(); // a new token each start: ranks of an earlier start cannot join
            JobFlightRecords records = JobFlightRecords.forNewJob(env);
            List<String> rankEnv = new ArrayList<>(o.ranks.env);
            if (restarts.enabled()) {
                rankEnv.add(Distributed.RESTART_VARIABLE + "=" + round);
            }
            EnvironmentPlan.Inputs inputs = new EnvironmentPlan.Inputs(backend, jobHosts, hosts.envs(), rankEnv,
                    term.columns(), term.lines(), o.verbose, p.repeat(), p.connectionsPerIp(), p.startingPort(), p.ncclPort(), token,
                    records.dir().toString());
            InputStream stdin = round == 0 ? in : InputStream.nullInputStream(); // the input went to the first start

            if (backend.equals("mpi")) {
                return runMpi(inputs, records, o, p.timeoutSeconds(), argv, log);
            }
            if (placement.placement() == Placement.SRUN) {
                Round r = runSrun(inputs, o, p, command, argv, log, stdin, jobDeadline);
                if (r.done() || !restarts.restartAfter(r, round, null)) {
                    return restarts.finish(r.status(), round, r.done());
                }
                continue;
            }
            Round r = runRanks(inputs, records, o, p, placement, argv, log, stdin, jobDeadline, round);
            if (r.done() || !restarts.restartAfter(r, round, jobHosts)) {
                return restarts.finish(r.status(), round, r.done());
            }
            jobHosts = restarts.hostsFor(jobHosts);
        }
    }

    /** How one start of the job ended: its status, and whether it may be started again (a rank failed on its own). */
    record Round(int status, boolean done, JobSupervisor.Failure failure) {
    }

    /** The ranks of one start, over the host list (ssh) or on this machine (local). */
    private Round runRanks(EnvironmentPlan.Inputs inputs, JobFlightRecords records, LaunchOptions o, LaunchArguments.Parsed p,
                           Placement.Choice placement, List<String> argv, ConsoleLog log, InputStream stdin, long jobDeadline,
                           int round) throws InterruptedException {
        EnvironmentPlan.Result plan = EnvironmentPlan.plan(inputs);
        if (round == 0) {
            plan.warnings().forEach(log::warn);
            log.info("Running " + ShellQuote.join(argv));
        }

        String cwd = o.cwd != null ? o.cwd : System.getProperty("user.dir");
        boolean bind = o.ranks.bindToCore();
        Map<String, Integer> ranksOnHost = new HashMap<>();
        Map<Integer, Integer> cpuSlots = new HashMap<>();
        List<JobSupervisor.RankStart> starts = new ArrayList<>();
        for (RankPlan rp : plan.ranks()) {
            HostEntry where = startHost(rp.host(), placement.placement());
            int slot = ranksOnHost.merge(where.ssh(), 1, Integer::sum) - 1;
            if (bind) cpuSlots.put(rp.rank(), slot);
            String boot = Bootstrap.script(rp, argv, cwd, o.cwd != null, !where.isLocal(), bind ? slot : -1);
            starts.add(new JobSupervisor.RankStart(rp.rank(), where, boot,
                    rp.dropInheritedHostfile() ? List.of("MLX_HOSTFILE") : List.of()));
        }
        if (o.dryRun) {
            printDryRun(plan, placement.placement(), argv, cwd, o.cwd != null, cpuSlots);
            return new Round(0, true, null);
        }
        OutputSink sink = outputSink(o);
        String ssh = Executables.ssh();
        JobSupervisor supervisor = new JobSupervisor(log, sink, ssh, stdin, p.timeoutSeconds()).deadline(jobDeadline)
                .resumeStoppedRanks(p.maxRestarts() > 0);
        if (handleSignals) {
            current.set(new Current(supervisor::signal, supervisor::emergencyStop));
            installSignalsOnce();
        }
        if (signalled != 0) {
            return new Round(128 + signalled, true, null); // a signal between two starts: no new start
        }
        int status = supervisor.run(starts);
        var ends = supervisor.rankEnds();
        // Remote hosts to read records from: not one whose ssh failed on its own (255: most likely unreachable now)
        List<HostEntry> remote = starts.stream().filter(st -> !st.host().isLocal())
                .filter(st -> starts.stream().noneMatch(other -> other.host().ssh().equals(st.host().ssh()) && ends.containsKey(other.rank())
                        && ends.get(other.rank()).exitCode() == 255 && !ends.get(other.rank()).endedByLauncher()))
                .map(JobSupervisor.RankStart::host).toList();
        records.afterJob(status == 0, remote, starts.size(), ends, ssh, log);
        boolean done = status == 0 || supervisor.endedByLauncher() || signalled != 0 || supervisor.failure().isEmpty();
        return new Round(status, done, supervisor.failure().orElse(null));
    }

    /**
     * {@code --max-restarts} and {@code --max-failures-per-host}: what may be started again, on which hosts, and the
     * lines that say how many starts were used and why (docs/launching.md, "Restarting a failed job").
     */
    static final class Restarts {
        private final int max;
        private final Integer maxPerHost;
        private final ConsoleLog log;
        private final List<String> why = new ArrayList<>();
        private final Map<String, Integer> failuresByHost = new HashMap<>();
        private final java.util.Set<String> excluded = new java.util.LinkedHashSet<>();

        Restarts(int max, Integer maxPerHost, ConsoleLog log) {
            this.max = max;
            this.maxPerHost = maxPerHost;
            this.log = log;
        }

        boolean enabled() {
            return max > 0;
        }

        /**
         * After start {@code round} failed with {@code r}: whether to start again (and says so), counting the failure
         * against the host of the rank that failed first ({@code hosts} null: hosts are not tracked, srun).
         */
        boolean restartAfter(Round r, int round, List<HostEntry> hosts) {
            String reason = r.failure() != null ? r.failure().describe() : "the job step failed with status " + r.status();
            if (max == 0) {
                return false;
            }
            why.add("start " + round + ": " + reason);
            if (round >= max) {
                log.error("job failed after " + round + " restart" + (round == 1 ? "" : "s") + ", all that --max-restarts " + max
                        + " allows; " + String.join("; ", why));
                return false;
            }
            if (maxPerHost != null && hosts != null && r.failure() != null) {
                String host = r.failure().host().ssh();
                int n = failuresByHost.merge(host, 1, Integer::sum);
                if (n >= maxPerHost) {
                    List<String> left = hosts.stream().map(HostEntry::ssh).filter(h -> !h.equals(host)).distinct().toList();
                    if (left.isEmpty()) {
                        log.error("host " + host + " failed " + n + " time" + (n == 1 ? "" : "s") + " (--max-failures-per-host "
                                + maxPerHost + ") and no other host is left for the job's " + hosts.size() + " ranks; ending the job after "
                                + round + " restart" + (round == 1 ? "" : "s") + "; " + String.join("; ", why));
                        return false;
                    }
                    excluded.add(host);
                    log.warn("host " + host + " failed " + n + " time" + (n == 1 ? "" : "s") + " (--max-failures-per-host " + maxPerHost
                            + "): its ranks move to " + String.join(", ", left) + " from the next start");
                }
            }
            log.warn("restart " + (round + 1) + " of at most " + max + ": " + reason + "; every rank was ended and the job "
                    + "starts again with " + Distributed.RESTART_VARIABLE + "=" + (round + 1) + " and a new job token");
            return true;
        }

        /**
         * The host list of the next start: the ranks of excluded hosts take, in turn, the entries of the hosts left,
         * one host after the other (a1, c1, a2, c2, ...), so that they spread over those hosts.
         */
        List<HostEntry> hostsFor(List<HostEntry> hosts) {
            if (excluded.isEmpty()) return hosts;
            Map<String, List<HostEntry>> byHost = new java.util.LinkedHashMap<>();
            for (HostEntry h : hosts) {
                if (!excluded.contains(h.ssh())) byHost.computeIfAbsent(h.ssh(), k -> new ArrayList<>()).add(h);
            }
            List<HostEntry> order = new ArrayList<>();
            for (int i = 0; order.size() < byHost.values().stream().mapToInt(List::size).sum(); i++) {
                for (List<HostEntry> entries : byHost.values()) {
                    if (i < entries.size()) order.add(entries.get(i));
                }
            }
            List<HostEntry> next = new ArrayList<>();
            int moved = 0;
            for (HostEntry h : hosts) {
                next.add(excluded.contains(h.ssh()) ? order.get(moved++ % order.size()) : h);
            }
            return next;
        }

        /**
         * The launcher's status after the last start, with the line that counts the restarts when some were used
         * ({@code ended}: the last start ended without a failure to restart after, e.g. a signal; otherwise
         * {@link #restartAfter} has said why there is no restart).
         */
        int finish(int status, int round, boolean ended) {
            String restarts = round + " restart" + (round == 1 ? "" : "s") + " (--max-restarts " + max + "); " + String.join("; ", why);
            if (status == 0 && round > 0) {
                log.warn("job completed after " + restarts);
            } else if (ended && round > 0) {
                log.error("job ended with status " + status + " after " + restarts);
            }
            return status;
        }
    }

    /** The options that restart cannot honour, refused before anything starts. */
    private static void checkRestartOptions(LaunchArguments.Parsed p, String backend, Placement placement) {
        if (p.maxRestarts() > 0 && backend.equals("mpi")) {
            throw CliFailure.usage("--max-restarts is not available with --backend mpi: mpirun starts and ends the ranks and "
                    + "does not say which one failed; run jdist launch in a loop of your own, or use the ring backend");
        }
        if (p.maxFailuresPerHost() != null && placement == Placement.SRUN) {
            throw CliFailure.usage("--max-failures-per-host is not available with --launcher srun: Slurm chooses the nodes of "
                    + "each job step; exclude a node with srun's --exclude in your batch script instead");
        }
    }

    /** The signal handlers' target: the supervisor or srun job of the current start. */
    private record Current(java.util.function.IntConsumer signal, Runnable emergencyStop) {
    }

    private final java.util.concurrent.atomic.AtomicReference<Current> current = new java.util.concurrent.atomic.AtomicReference<>();
    private volatile int signalled;
    private boolean signalsInstalled;

    /** Signal handlers and shutdown hook, once for all starts of the job; each start sets {@link #current}. */
    private void installSignalsOnce() {
        if (signalsInstalled) return;
        signalsInstalled = true;
        installSignals(sig -> {
            if (signalled == 0) signalled = sig;
            Current c = current.get();
            if (c != null) c.signal().accept(sig);
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Current c = current.get();
            if (c != null) c.emergencyStop().run();
        }, "jdist-launch-stop"));
    }

    private static String newJobToken() {
        byte[] b = new byte[16];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /**
     * Where a rank is started: its host entry, or under {@code --launcher local} this machine (the entry's addresses
     * stay the ring's addresses, so they must be this machine's).
     */
    private static HostEntry startHost(HostEntry h, Placement placement) {
        return placement == Placement.LOCAL && !h.isLocal() ? new HostEntry(HostEntry.LOCAL, h.ips(), h.rdma()) : h;
    }

    private OutputSink outputSink(LaunchOptions o) {
        try {
            return new OutputSink(out, err, o.tagOutput, o.timestampOutput, o.outputDir == null ? null : Path.of(o.outputDir));
        } catch (IOException e) {
            throw CliFailure.usage("--output-dir " + o.outputDir + ": cannot create it (" + e.getMessage() + ")");
        }
    }

    /** {@code --launcher srun}: one job step, planned ({@link SrunPlan}) then run ({@link SrunJob}). */
    private Round runSrun(EnvironmentPlan.Inputs inputs, LaunchOptions o, LaunchArguments.Parsed p, List<String> command,
                          List<String> argv, ConsoleLog log, InputStream stdin, long jobDeadline) throws InterruptedException {
        Path srun = Executables.onPath("srun").orElseThrow(() -> CliFailure.of(1,
                "srun not found on PATH (" + env.get("PATH") + "); install Slurm's client commands or put them on PATH"));
        String pinned = env.get("JDIST_LAUNCH_BACKEND");
        // a backend the user chose is every rank's; otherwise each rank chooses ("any": nccl where usable, else ring)
        String backend = o.target.backend != null || (pinned != null && !pinned.isEmpty()) ? inputs.backend() : null;
        List<String> nodes = p.given().contains("--hosts")
                ? inputs.hosts().stream().map(HostEntry::ssh).distinct().toList() : List.of();
        Integer ranks = p.given().contains("--repeat-hosts") ? p.repeat() : null;
        List<String> handOff = new ArrayList<>();
        handOff.add(CommandResolver.javaPath(o.java));
        handOff.addAll(CommandResolver.JDIST_JVM_FLAGS);
        handOff.addAll(List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m", "-cp",
                String.join(":", CommandResolver.jdistClassPath()), HandOffTask.class.getName()));
        Integer allocationTasks = null;
        try {
            allocationTasks = env.containsKey("SLURM_NTASKS") ? Integer.valueOf(env.get("SLURM_NTASKS").strip()) : null;
        } catch (NumberFormatException ignored) {
            // srun will say what is wrong with it
        }
        SrunPlan plan = SrunPlan.plan(new SrunPlan.Inputs(srun.toString(), inputs, backend, nodes, ranks, allocationTasks, o.cwd, o.ranks.bindTo,
                argv, CommandResolver.isJavaTarget(command, o.python, o.classPath), handOff));
        plan.warnings().forEach(log::warn);
        log.info("Running " + ShellQuote.join(plan.argv()));
        if (o.dryRun) {
            out.println("# dry run: nothing is started");
            out.println("srun: " + ShellQuote.join(plan.argv()));
            out.println("ranks: " + plan.ranks() + "; each finds its rank in SLURM_PROCID and meets the others through the "
                    + "rendezvous on the first node of the step");
            for (EnvEntry e : plan.env()) {
                out.println("env: " + e);
            }
            out.println("unset: " + String.join(" ", plan.unset()));
            out.flush();
            return new Round(0, true, null);
        }
        SrunJob job = new SrunJob(log, outputSink(o), out, stdin, p.timeoutSeconds()).deadline(jobDeadline);
        if (handleSignals) {
            current.set(new Current(job::signal, job::emergencyStop));
            installSignalsOnce();
        }
        if (signalled != 0) {
            return new Round(128 + signalled, true, null);
        }
        int status = job.run(plan);
        boolean done = status == 0 || status == 127 || job.endedByLauncher() || signalled != 0;
        return new Round(status, done, job.failure().orElse(null));
    }

    private void printDryRun(EnvironmentPlan.Result plan, Placement placement, List<String> argv, String cwd, boolean cwdGiven,
                             Map<Integer, Integer> cpuSlots) {
        out.println("# dry run: nothing is started");
        for (RankPlan rp : plan.ranks()) {
            HostEntry h = rp.host();
            out.println("rank " + rp.rank() + " on " + h.ssh() + (h.isLocal() ? " (local)"
                    : startHost(h, placement).isLocal() ? " (local: --launcher local)" : " (ssh)"));
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

    private int runMpi(EnvironmentPlan.Inputs inputs, JobFlightRecords records, LaunchOptions o, Double timeoutSeconds,
                       List<String> argv, ConsoleLog log) throws InterruptedException {
        Path mpirun = Executables.onPath("mpirun").orElseThrow(() -> CliFailure.of(1,
                "mpirun not found on PATH (" + System.getenv("PATH") + "); install Open MPI or put its bin directory on PATH"));
        List<EnvEntry> entries = new ArrayList<>(MpiLaunch.discover(mpirun));
        entries.addAll(EnvironmentPlan.commonEntries(inputs, false, new ArrayList<>()));
        List<String> words = MpiLaunch.mpiArgWords(o.mpiArg);
        String version = Executables.output(List.of(mpirun.toString(), "--version"), 10).orElse("");
        boolean ompi4 = MpiLaunch.isOpenMpi4(version);
        Path hostfile;
        try {
            hostfile = Files.createTempFile("jdist-mpi-hosts-", ".txt");
            Files.writeString(hostfile, MpiLaunch.hostfile(inputs.hosts()));
        } catch (IOException e) {
            throw CliFailure.of(1, "cannot write the temporary MPI hostfile: " + e.getMessage());
        }
        try {
            MpiLaunch.JdistVariables jdistVars = MpiLaunch.jdistVariables(inputs.jobToken(), inputs.dumpDir(), entries,
                    MpiLaunch.isOpenMpi(version), o.mlxCompatible);
            List<String> cmd = MpiLaunch.argv(mpirun.toString(), ompi4, hostfile.toString(), o.cwd, entries,
                    jdistVars.forwardedNames(), words, argv);
            Map<String, String> mpirunEnv = jdistVars.environment();
            log.info("Using '" + mpirun + "'");
            log.info("Running " + String.join(" ", cmd));
            if (o.dryRun) {
                out.println("# dry run: nothing is started");
                out.println("mpirun: " + ShellQuote.join(cmd));
                mpirunEnv.forEach((k, v) -> out.println("mpirun's environment: " + k + "="
                        + (k.equals(JobToken.VARIABLE) ? "(a fresh job token)" : v)));
                out.print("hostfile " + hostfile + ":\n" + MpiLaunch.hostfile(inputs.hosts()));
                out.flush();
                return 0;
            }
            Process proc;
            try {
                // stderr through the launcher, to notice a rank's MPI_Abort (MpiAbortWatch)
                ProcessBuilder pb = new ProcessBuilder(cmd).inheritIO().redirectError(ProcessBuilder.Redirect.PIPE);
                pb.environment().putAll(mpirunEnv);
                proc = pb.start();
            } catch (IOException e) {
                throw CliFailure.of(1, "cannot start " + mpirun + ": " + e.getMessage());
            }
            MpiAbortWatch aborts = new MpiAbortWatch(proc.getErrorStream(), System.err);
            Thread stderr = Thread.ofPlatform().daemon().name("jdist-mpirun-stderr").start(aborts);
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
            boolean abortOverdue = false;
            boolean timedOut = false;
            long deadline = timeoutSeconds == null ? Long.MAX_VALUE : System.nanoTime() + (long) (timeoutSeconds * 1e9);
            while (!proc.waitFor(200, TimeUnit.MILLISECONDS)) {
                synchronized (signal) {
                    if (signal[0] != 0) {
                        break;
                    }
                }
                if (aborts.overdue(System.nanoTime())) {
                    abortOverdue = true;
                    break;
                }
                if (System.nanoTime() - deadline >= 0) {
                    timedOut = true;
                    break;
                }
            }
            if (timedOut) {
                // also what bounds an mpirun that never starts its job (Open MPI's start-up hangs over ssh)
                log.error("job ran longer than --timeout " + o.timeout.trim() + " s; ending mpirun");
                endMpirun(proc);
                stderr.join(1_000);
                records.afterJob(false, inputs.hosts().stream().filter(h -> !h.isLocal()).toList(), inputs.hosts().size(),
                        Map.of(), Executables.ssh(), log);
                return JobSupervisor.TIMEOUT_STATUS;
            }
            if (abortOverdue) {
                // mpirun waits for a daemon it cannot reach: end it, and say what may be left on that host
                log.error("mpirun has not ended " + MpiAbortWatch.MPIRUN_AFTER_ABORT_MILLIS / 1000 + " s after a rank called "
                        + "MPI_Abort: one of its daemons cannot be reached (a network partition, or a host that is down). "
                        + "Ending mpirun. A rank on that host ends itself within " + MpiBackend.ABORT_BOUND_MILLIS / 1000
                        + " s of its own MPI_Abort; Open MPI's daemon there ends when it finds its mpirun gone, once the "
                        + "host is reachable again (hosts of the job: " + String.join(", ", inputs.hosts().stream().map(HostEntry::ssh).distinct().toList()) + ")");
                endMpirun(proc);
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
            // the last lines mpirun forwarded (after an overdue abort, ssh sessions to a cut-off host may hold the pipe)
            stderr.join(abortOverdue ? 1_000 : 5_000);
            int status = abortOverdue ? MpiBackend.ABORT_EXIT_CODE : proc.exitValue();
            // mpirun says nothing of how each rank ended: the analysis goes by the records alone
            List<HostEntry> remote = inputs.hosts().stream().filter(h -> !h.isLocal()).toList();
            records.afterJob(status == 0, remote, inputs.hosts().size(), Map.of(), Executables.ssh(), log);
            return status;
        } finally {
            try {
                Files.deleteIfExists(hostfile);
            } catch (IOException ignored) {
                // best effort
            }
        }
    }

    /** SIGTERM to {@code mpirun} (it ends its job), SIGKILL after {@link RankProcess#GRACE_MILLIS}. */
    private static void endMpirun(Process proc) throws InterruptedException {
        proc.destroy();
        if (!proc.waitFor(RankProcess.GRACE_MILLIS, TimeUnit.MILLISECONDS)) {
            proc.destroyForcibly();
            proc.waitFor(RankProcess.GRACE_MILLIS, TimeUnit.MILLISECONDS);
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
