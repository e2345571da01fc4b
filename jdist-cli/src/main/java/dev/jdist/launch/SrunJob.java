package dev.jdist.launch;

import dev.jdist.console.ConsoleLog;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Runs an {@link SrunPlan}: one {@code srun}, whose labelled output is turned back into each rank's output and whose
 * task reports become the launcher's own report lines, so that the rules of docs/reference/launcher.md §7–§8 hold under Slurm too:
 * <ul>
 *   <li>output: every task line goes to the launcher's stdout or stderr, whole, with {@code --tag-output},
 *       {@code --timestamp-output} and {@code --output-dir} applied per rank ({@link OutputSink});</li>
 *   <li>stdin: srun gives it to every task ({@code --input=all});</li>
 *   <li>failure rule: srun's {@code --kill-on-bad-exit=1} ends the step when a task fails; the launcher prints
 *       {@code [WARN] Node with rank R exited with code C} for it and {@code ... was killed} for the tasks Slurm then
 *       ended, and exits with the first failed rank's status;</li>
 *   <li>signals and {@code --timeout}: SIGTERM to srun, which cancels the step (Slurm sends the tasks SIGCONT and
 *       SIGTERM, then SIGKILL after the cluster's {@code KillWait}) and ends itself within KillWait + 2 s; srun still
 *       running {@link #STOP_MILLIS} later is killed. Exit 128 + signal, or 124.</li>
 * </ul>
 * Unlabelled lines on srun's stderr (its own messages: queued, allocation, errors) pass through unchanged.
 */
public final class SrunJob {

    /** How long after SIGTERM srun may take to end the step before it is killed (Slurm's default KillWait is 30 s). */
    static final long STOP_MILLIS = 45_000;
    private static final long DRAIN_MILLIS = 5_000;

    private final ConsoleLog log;
    private final OutputSink sink;
    private final PrintStream out;
    private final InputStream stdin;
    private final Double timeoutSeconds;
    private long jobDeadline = Long.MAX_VALUE;
    private final BlockingQueue<Integer> signals = new LinkedBlockingQueue<>();
    private final Set<Integer> reported = new HashSet<>();
    private volatile Process srun;
    private volatile boolean stopping;
    private Failure firstFailure;
    private int ended;
    private volatile boolean endedByLauncher;

    private record Failure(int rank, String node, int status) {
    }

    public SrunJob(ConsoleLog log, OutputSink sink, PrintStream out, InputStream stdin, Double timeoutSeconds) {
        this.log = log;
        this.sink = sink;
        this.out = out;
        this.stdin = stdin;
        this.timeoutSeconds = timeoutSeconds;
    }

    /**
     * Ends the job at {@code nanos} ({@link System#nanoTime()}) instead of {@code timeoutSeconds} after it starts: the
     * deadline of {@code --timeout} over all starts of a job that restarts (docs/reference/launcher.md §8.7).
     */
    public SrunJob deadline(long nanos) {
        this.jobDeadline = nanos;
        return this;
    }

    /** Called from a signal handler: SIGINT 2, SIGTERM 15, SIGHUP 1. */
    public void signal(int signal) {
        signals.add(signal);
    }

    /** JVM shutdown without a normal end: srun cancels the step on SIGTERM. */
    public void emergencyStop() {
        Process p = srun;
        if (p != null && p.isAlive()) p.destroy();
    }

    /** After {@link #run}: the task Slurm reported failed first, when that is how the step ended (its node as the host). */
    public synchronized java.util.Optional<JobSupervisor.Failure> failure() {
        return endedByLauncher || firstFailure == null ? java.util.Optional.empty() : java.util.Optional.of(new JobSupervisor.Failure(
                firstFailure.rank(), new dev.jdist.hosts.HostEntry(firstFailure.node(), List.of()), firstFailure.status()));
    }

    /** After {@link #run}: whether the launcher ended the step (a signal or {@code --timeout}). */
    public boolean endedByLauncher() {
        return endedByLauncher;
    }

    /** Runs the step to its end and returns the launcher's exit status. */
    public int run(SrunPlan plan) throws InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(plan.argv());
        plan.unset().forEach(pb.environment()::remove);
        for (EnvEntry e : plan.env()) pb.environment().put(e.name(), e.value());
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            log.error("cannot start " + plan.argv().getFirst() + ": " + e.getMessage());
            return 127;
        }
        srun = p;
        Thread o = reader(p.getInputStream(), false);
        Thread e = reader(p.getErrorStream(), true);
        feedStdin(p.getOutputStream());

        long deadline = timeoutSeconds == null ? Long.MAX_VALUE
                : jobDeadline != Long.MAX_VALUE ? jobDeadline : System.nanoTime() + (long) (timeoutSeconds * 1e9);
        Integer signalStatus = null;
        boolean timedOut = false;
        long stopDeadline = Long.MAX_VALUE;
        while (!p.waitFor(200, TimeUnit.MILLISECONDS)) {
            Integer sig = signals.poll();
            if (sig != null && signalStatus == null) {
                signalStatus = 128 + sig;
                stopDeadline = stop(p);
            }
            if (!timedOut && signalStatus == null && System.nanoTime() >= deadline) {
                timedOut = true;
                log.error("job ran longer than --timeout " + seconds(timeoutSeconds) + " s; ending the job step");
                stopDeadline = stop(p);
            }
            if (System.nanoTime() >= stopDeadline) {
                log.warn("srun did not end within " + STOP_MILLIS / 1000 + " s of SIGTERM; killing it");
                p.destroyForcibly();
                stopDeadline = Long.MAX_VALUE;
            }
        }
        o.join(DRAIN_MILLIS);
        e.join(DRAIN_MILLIS);
        int code = p.exitValue();
        if (signalStatus != null || timedOut) {
            endedByLauncher = true;
            // srun does not always report the tasks it cancelled: every rank not reported was ended by the launcher
            synchronized (this) {
                if (plan.rankCount() != null) {
                    for (int r = 0; r < plan.rankCount(); r++) {
                        if (reported.add(r)) log.warn("Node with rank " + r + " was killed");
                    }
                }
            }
            return signalStatus != null ? signalStatus : JobSupervisor.TIMEOUT_STATUS;
        }
        synchronized (this) {
            if (firstFailure != null) {
                int others = ended;
                log.error("job failed: rank " + firstFailure.rank() + " on " + firstFailure.node() + " exited with code "
                        + firstFailure.status() + (others > 0 ? " (Slurm then ended " + others + " other rank" + (others == 1 ? "" : "s")
                        + ": --kill-on-bad-exit)" : ""));
                return firstFailure.status();
            }
        }
        if (code != 0) {
            log.error("srun exited with code " + code + " (its messages are above)");
        }
        return code;
    }

    private long stop(Process p) {
        stopping = true;
        p.destroy();   // SIGTERM: srun cancels the step
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_MILLIS);
    }

    /** One of srun's streams, line by line: task lines to the sink, srun's reports to report lines, the rest as is. */
    private Thread reader(InputStream in, boolean stderr) {
        Thread t = new Thread(() -> {
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            Set<Integer> open = new HashSet<>();
            try (in) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    for (int i = 0; i < n; i++) {
                        line.write(buf[i]);
                        if (buf[i] == '\n') {
                            line(line.toByteArray(), stderr, open);
                            line.reset();
                        }
                    }
                }
            } catch (IOException ignored) {
                // srun ended: what it wrote has been read
            }
            if (line.size() > 0) line(line.toByteArray(), stderr, open);
            for (int r : open) sink.close(r, stderr);
        }, "srun-" + (stderr ? "stderr" : "stdout"));
        t.setDaemon(true);
        t.start();
        return t;
    }

    private void line(byte[] bytes, boolean stderr, Set<Integer> open) {
        Optional<SrunOutput.Labelled> l = SrunOutput.label(bytes, bytes.length);
        if (l.isPresent()) {
            int rank = l.get().rank();
            open.add(rank);
            sink.write(rank, stderr, bytes, l.get().textStart(), bytes.length - l.get().textStart());
            return;
        }
        String text = new String(bytes, StandardCharsets.UTF_8);
        if (stderr) {
            Optional<SrunOutput.TaskReport> r = SrunOutput.report(text.strip());
            if (r.isPresent()) {
                report(r.get());
                return;
            }
            log.raw(text);
        } else {
            synchronized (ConsoleLog.LOCK) {
                out.print(text);
                out.flush();
            }
        }
    }

    /** srun's "task(s) ... Exited with exit code C" / "Killed": the launcher's report lines (§8.1), once per rank. */
    private synchronized void report(SrunOutput.TaskReport r) {
        for (int rank : r.ranks()) {
            if (!reported.add(rank)) continue;   // srun may say it twice
            if (stopping || firstFailure != null) {
                ended++;
                log.warn("Node with rank " + rank + " was killed");
            } else if (r.status() < 0) {
                log.warn("Node with rank " + rank + " ended: " + r.text());
                firstFailure = new Failure(rank, r.node(), 1);
            } else {
                log.warn("Node with rank " + rank + " exited with code " + r.status());
                firstFailure = new Failure(rank, r.node(), r.status());
            }
        }
    }

    private void feedStdin(OutputStream to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[8192];
            try (to) {
                int n;
                while ((n = stdin.read(buf)) > 0) {
                    to.write(buf, 0, n);
                    to.flush();
                }
            } catch (IOException ignored) {
                // srun ended, or no usable stdin: same as end of input
            }
        }, "srun-stdin");
        t.setDaemon(true);
        t.start();
    }

    private static String seconds(double s) {
        return s == Math.rint(s) ? Long.toString((long) s) : Double.toString(s);
    }
}
