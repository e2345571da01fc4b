package dev.jdist.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A real one-node Slurm cluster for integration tests: Debian's {@code slurm-wlm} daemons ({@code munged},
 * {@code slurmctld}, {@code slurmd}) started by the test as root, in the foreground, with everything they write in one
 * temporary folder: the munge key and socket, {@code slurm.conf}, {@code StateSaveLocation}, {@code SlurmdSpoolDir},
 * pid files and logs. Needs root (see {@link #requirements()}).
 *
 * <p>The node is {@code localhost} (address 127.0.0.1, so a job's node list resolves to loopback and every connection
 * a job makes stays on this machine), declared with {@link #CPUS} task slots whatever the machine has
 * ({@code SlurmdParameters=config_overrides}). Process tracking is plain {@code proctrack/linuxproc} and no task plugin,
 * so no cgroups or systemd are needed. The ports are free ones; {@code FirstJobId} is random, so the job ids (and the
 * rendezvous ports jdist derives from them) differ from run to run.
 *
 * <p>Clients ({@code srun}, {@code sbatch}, {@code salloc}, {@code squeue}) find the cluster through
 * {@code SLURM_CONF}: {@link #env()} gives it, and {@link #run} adds it.
 *
 * <p>{@link #close()} cancels every job of this cluster, waits for them to end (bounded), stops the step daemons
 * ({@code slurmstepd}: found by their working directory, which is this cluster's log folder) with their task processes,
 * then the three daemons, each by its own pid, and deletes the folder; it also runs from a shutdown hook. A new cluster
 * first stops the daemons of clusters whose test JVM died (the folder name carries that JVM's pid).
 */
public final class SlurmCluster implements AutoCloseable {

    /** The node's task slots (more than the machine may have: config_overrides). */
    public static final int CPUS = 8;
    /** The node's name in Slurm: what {@code SLURM_JOB_NODELIST} and {@code SLURM_STEP_NODELIST} say. */
    public static final String NODE = "localhost";

    private static final Duration CMD_TIMEOUT = Duration.ofSeconds(30);
    private static final String DIR_PREFIX = "jdist-slurm-";
    private static final Pattern STALE_DIR = Pattern.compile("^" + DIR_PREFIX + "(\\d+)-");

    private final Path dir;
    private final Path conf;
    private final List<Process> daemons = new ArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread hook;

    /** Skips the test (fails under CI=true) unless root and the slurm-wlm and munge programs are there. */
    public static void requirements() {
        Requirements.require(Requirements.root(),
                Requirements.file("/usr/sbin/slurmctld"), Requirements.file("/usr/sbin/slurmd"),
                Requirements.file("/usr/sbin/munged"), Requirements.command("srun", "slurm-client"),
                Requirements.command("sbatch", "slurm-client"), Requirements.command("salloc", "slurm-client"));
    }

    /** Starts the daemons and waits (bounded) until the node takes jobs. */
    public static SlurmCluster start() {
        requirements();
        SlurmCluster c = new SlurmCluster();
        try {
            c.setUp();
            return c;
        } catch (RuntimeException | Error e) {
            String logs = c.logs();
            c.close();
            throw new IllegalStateException("SlurmCluster did not start: " + e.getMessage() + "\n" + logs, e);
        }
    }

    private SlurmCluster() {
        stopStaleClusters();
        try {
            this.dir = Files.createTempDirectory(DIR_PREFIX + ProcessHandle.current().pid() + "-");
            // munged wants every folder above its socket searchable by all
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.conf = dir.resolve("slurm.conf");
        this.hook = new Thread(this::close, "slurm-cluster-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    // ------------------------------------------------------------------ accessors

    /** The cluster's folder (deleted by close). */
    public Path directory() {
        return dir;
    }

    /** {@code slurm.conf}. */
    public Path config() {
        return conf;
    }

    /** What a client needs in its environment to use this cluster: {@code SLURM_CONF}. */
    public Map<String, String> env() {
        return Map.of("SLURM_CONF", conf.toString());
    }

    /** Runs a client command ({@code srun ...}, {@code sbatch ...}) with {@link #env()} and {@code extraEnv} added. */
    public CommandResult run(Duration timeout, Path cwd, Map<String, String> extraEnv, List<String> command) {
        Map<String, String> e = new HashMap<>(extraEnv);
        e.putAll(env());
        return CommandResult.run(timeout, cwd, e, null, command);
    }

    /** The daemons' logs, for assertion messages. */
    public String logs() {
        StringBuilder sb = new StringBuilder();
        for (String name : List.of("munged.log", "slurmctld.log", "slurmd.log")) {
            Path p = dir == null ? null : dir.resolve("log").resolve(name);
            if (p == null || !Files.exists(p)) continue;
            try {
                List<String> lines = Files.readAllLines(p);
                sb.append("---- ").append(name).append(" (last lines)\n");
                lines.subList(Math.max(0, lines.size() - 30), lines.size()).forEach(l -> sb.append(l).append('\n'));
            } catch (IOException e) {
                sb.append("---- ").append(name).append(": ").append(e).append('\n');
            }
        }
        return sb.toString();
    }

    /**
     * Submits {@code script} with {@code sbatch} (the script's own {@code #SBATCH} lines apply) and returns when the job
     * has ended, with the job's exit code (as {@code sbatch --wait} gives it); the result's output is sbatch's and the
     * job's final {@code scontrol} record, the job's output is where the script sends it. Polls {@code scontrol} every
     * 200 ms: {@code sbatch --wait} polls with a growing interval, which added up to 30 s to a 10 s job.
     */
    public CommandResult sbatchWait(Duration timeout, Path cwd, Map<String, String> extraEnv, Path script, String... options) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<String> cmd = new ArrayList<>(List.of("sbatch", "--parsable"));
        cmd.addAll(List.of(options));
        cmd.add(script.toString());
        CommandResult submitted = run(timeout, cwd, extraEnv, cmd);
        if (!submitted.ok()) return submitted;
        String job = submitted.stdout().strip().split(";")[0];
        String record = "";
        while (System.nanoTime() < deadline) {
            CommandResult q = run(Duration.ofSeconds(10), null, Map.of(), List.of("scontrol", "-o", "show", "job", job));
            record = q.stdout().strip();
            Matcher state = Pattern.compile("\\bJobState=(\\S+)").matcher(record);
            if (q.ok() && state.find() && TERMINAL.contains(state.group(1))) {
                // ExitCode=STATUS:SIGNAL; a job that did not complete has a non-zero code, as sbatch --wait gives it
                Matcher exit = Pattern.compile("\\bExitCode=(\\d+):(\\d+)").matcher(record);
                boolean found = exit.find();
                int status = found ? Integer.parseInt(exit.group(1)) : 0;
                int signal = found ? Integer.parseInt(exit.group(2)) : 0;
                int code = state.group(1).equals("COMPLETED") ? 0 : status != 0 ? status : signal != 0 ? 128 + signal : 1;
                return new CommandResult(cmd, code, submitted.stdout() + record + "\n", submitted.stderr(), false);
            }
            sleep(200);
        }
        run(Duration.ofSeconds(10), null, Map.of(), List.of("scancel", job));
        return new CommandResult(cmd, CommandResult.TIMED_OUT, submitted.stdout() + record + "\n", submitted.stderr(), true);
    }

    /** The states a Slurm job does not leave. */
    private static final List<String> TERMINAL = List.of("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY");

    // ------------------------------------------------------------------ set up

    private void setUp() {
        try {
            Path munge = dir.resolve("munge");
            Path run = dir.resolve("run");
            Path log = dir.resolve("log");
            for (Path p : List.of(munge, run, log, dir.resolve("state"), dir.resolve("spool"))) Files.createDirectories(p);
            Files.setPosixFilePermissions(munge, PosixFilePermissions.fromString("rwx------"));
            Files.setPosixFilePermissions(run, PosixFilePermissions.fromString("rwxr-xr-x"));
            byte[] key = new byte[1024];
            new SecureRandom().nextBytes(key);
            Path keyFile = munge.resolve("munge.key");
            Files.write(keyFile, key);
            Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("r--------"));
            Path socket = run.resolve("munge.sock");

            daemons.add(startDaemon("munged", log.resolve("munged.out"), "/usr/sbin/munged", "--foreground",
                    "--key-file=" + keyFile, "--socket=" + socket, "--pid-file=" + run.resolve("munged.pid"),
                    "--log-file=" + log.resolve("munged.log"), "--seed-file=" + munge.resolve("munged.seed")));
            awaitFile(socket, "munged's socket", daemons.get(0));

            int ctldPort = FreePorts.block(1);
            int slurmdPort = FreePorts.block(1);
            int firstJobId = ThreadLocalRandom.current().nextInt(1000, 1_000_000);
            String cfg = String.join("\n",
                    "# generated by SlurmCluster (jdist tests): one node, everything in " + dir,
                    "ClusterName=jdist" + ProcessHandle.current().pid(),
                    "SlurmctldHost=" + NODE + "(127.0.0.1)",
                    "SlurmctldPort=" + ctldPort,
                    "SlurmdPort=" + slurmdPort,
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    "AuthInfo=socket=" + socket,
                    "StateSaveLocation=" + dir.resolve("state"),
                    "SlurmdSpoolDir=" + dir.resolve("spool"),
                    "SlurmctldPidFile=" + run.resolve("slurmctld.pid"),
                    "SlurmdPidFile=" + run.resolve("slurmd.pid"),
                    "SlurmctldLogFile=" + log.resolve("slurmctld.log"),
                    "SlurmdLogFile=" + log.resolve("slurmd.log"),
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "JobCompType=jobcomp/none",
                    "SchedulerType=sched/builtin",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "MpiDefault=none",
                    "ReturnToService=2",
                    "KillWait=5",
                    "FirstJobId=" + firstJobId,
                    // a node declared with more CPUs than this machine has
                    "SlurmdParameters=config_overrides",
                    "NodeName=" + NODE + " NodeAddr=127.0.0.1 CPUs=" + CPUS + " State=UNKNOWN",
                    "PartitionName=jdist Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "");
            Files.writeString(conf, cfg);
            daemons.add(startDaemon("slurmctld", log.resolve("slurmctld.out"), "/usr/sbin/slurmctld", "-D", "-f", conf.toString()));
            daemons.add(startDaemon("slurmd", log.resolve("slurmd.out"), "/usr/sbin/slurmd", "-D", "-N", NODE, "-f", conf.toString()));
            awaitIdleNode();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Process startDaemon(String name, Path output, String... argv) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(argv);
        pb.environment().put("SLURM_CONF", conf.toString());
        pb.redirectErrorStream(true).redirectOutput(output.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        Files.writeString(dir.resolve("run").resolve(name + ".test-pid"), Long.toString(p.pid()));
        return p;
    }

    private static void awaitFile(Path p, String what, Process owner) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!Files.exists(p)) {
            if (!owner.isAlive()) throw new IllegalStateException(what + " never appeared: the daemon exited " + owner.exitValue());
            if (System.nanoTime() > deadline) throw new IllegalStateException(what + " (" + p + ") did not appear within 20 s");
            sleep(50);
        }
    }

    /** Polls {@code sinfo} (bounded, 60 s) until the node is idle. */
    private void awaitIdleNode() {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            for (Process d : daemons) {
                if (!d.isAlive()) throw new IllegalStateException("a Slurm daemon exited " + d.exitValue() + " while starting");
            }
            CommandResult r = run(Duration.ofSeconds(10), null, Map.of(), List.of("sinfo", "-h", "-N", "-o", "%N %t"));
            last = r.stdout().strip() + r.stderr().strip();
            if (r.ok() && last.equals(NODE + " idle")) return;
            sleep(200);
        }
        throw new IllegalStateException("the Slurm node did not become idle within 60 s; sinfo says: " + last);
    }

    // ------------------------------------------------------------------ tear down

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        if (conf != null && Files.exists(conf)) {
            CommandResult.run(CMD_TIMEOUT, null, env(), null, List.of("scancel", "--user=root", "--full"));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (System.nanoTime() < deadline) {
                CommandResult q = CommandResult.run(Duration.ofSeconds(10), null, env(), null, List.of("squeue", "-h"));
                if (!q.ok() || q.stdout().isBlank()) break;
                sleep(200);
            }
        }
        stopStepDaemons(dir);
        for (int i = daemons.size() - 1; i >= 0; i--) stop(daemons.get(i).toHandle());
        TestFiles.deleteRecursively(dir);
        if (Thread.currentThread() != hook) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // the JVM is shutting down
            }
        }
    }

    /** The step daemons of the cluster in {@code clusterDir} (their working directory is its log folder) and their tasks. */
    private static void stopStepDaemons(Path clusterDir) {
        if (clusterDir == null) return;
        Path logDir = clusterDir.resolve("log");
        ProcessHandle.allProcesses().filter(h -> {
            try {
                return h.info().command().map(c -> c.endsWith("slurmstepd")).orElse(false)
                        && Files.readSymbolicLink(Path.of("/proc", Long.toString(h.pid()), "cwd")).startsWith(logDir);
            } catch (IOException | UnsupportedOperationException | SecurityException e) {
                return false;
            }
        }).forEach(h -> {
            h.descendants().forEach(SlurmCluster::stop);
            stop(h);
        });
    }

    /** SIGTERM, up to 10 s, then SIGKILL. */
    private static void stop(ProcessHandle h) {
        if (!h.isAlive()) return;
        h.destroy();
        try {
            h.onExit().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            h.destroyForcibly();
            try {
                h.onExit().get(5, TimeUnit.SECONDS);
            } catch (Exception ignored) {
                // reported by the next test's leftover check, if any
            }
        }
    }

    /** Daemons of clusters whose test JVM no longer runs: stopped by the pids recorded in their folders. */
    private static void stopStaleClusters() {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        try (Stream<Path> dirs = Files.list(tmp)) {
            for (Path d : dirs.toList()) {
                Matcher m = STALE_DIR.matcher(d.getFileName().toString());
                if (!m.find() || ProcessHandle.of(Long.parseLong(m.group(1))).isPresent()) continue;
                stopStepDaemons(d);
                for (String name : List.of("slurmd", "slurmctld", "munged")) {
                    Path pidFile = d.resolve("run").resolve(name + ".test-pid");
                    try {
                        long pid = Long.parseLong(Files.readString(pidFile).strip());
                        // only if that pid is still the daemon started for that folder
                        ProcessHandle.of(pid).filter(h -> h.info().commandLine().map(c -> c.contains(d.toString())).orElse(false))
                                .ifPresent(SlurmCluster::stop);
                    } catch (IOException | NumberFormatException ignored) {
                        // not started, or already gone
                    }
                }
                TestFiles.deleteRecursively(d);
            }
        } catch (IOException ignored) {
            // nothing to clean
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }


    @Override
    public String toString() {
        return "SlurmCluster(" + NODE + ", " + CPUS + " CPUs, SLURM_CONF=" + conf + ")";
    }
}
