package dev.jdist.launch;

import dev.jdist.console.ConsoleLog;
import dev.jdist.flight.FlightAnalysis;
import dev.jdist.hosts.HostEntry;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Starts every rank, broadcasts stdin, watches the ranks and applies the failure rule (docs/reference/launcher.md §6–§8):
 * the first rank that fails on its own ends all others; a signal to the launcher ends all ranks; the exit
 * status says what happened.
 */
public final class JobSupervisor {

    /** Exit status when the job ran past {@code --timeout} (as timeout(1)). */
    public static final int TIMEOUT_STATUS = 124;

    private sealed interface Event permits Exited, Finished, Signalled {
    }

    private record Exited(RankProcess rank) implements Event {
    }

    private record Finished(RankProcess rank) implements Event {
    }

    private record Signalled(int signal) implements Event {
    }

    /** What to start for one rank. */
    public record RankStart(int rank, HostEntry host, String boot, List<String> unsetEnv) {
    }

    /** The first rank that failed on its own (not ended by the launcher): its rank, host and exit status. */
    public record Failure(int rank, HostEntry host, int code) {
        /** "rank R on HOST exited with code C", with the signal's name for 128 + SIGKILL/SIGTERM/... */
        public String describe() {
            String sig = switch (code) {
                case 129 -> " (SIGHUP)";
                case 130 -> " (SIGINT)";
                case 134 -> " (SIGABRT)";
                case 137 -> " (SIGKILL)";
                case 139 -> " (SIGSEGV)";
                case 143 -> " (SIGTERM)";
                default -> "";
            };
            return "rank " + rank + " on " + host.ssh() + " exited with code " + code + sig;
        }
    }

    private final ConsoleLog log;
    private final OutputSink sink;
    private final String sshPath;
    private final InputStream stdin;
    private final Double timeoutSeconds;
    private long jobDeadline = Long.MAX_VALUE;
    private volatile boolean resumeStopped;
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final List<RankProcess> ranks = new ArrayList<>();
    private final List<Thread> terminators = new ArrayList<>();
    private volatile boolean stopping;
    private Failure failure;
    private boolean endedByLauncher;

    public JobSupervisor(ConsoleLog log, OutputSink sink, String sshPath, InputStream stdin, Double timeoutSeconds) {
        this.log = log;
        this.sink = sink;
        this.sshPath = sshPath;
        this.stdin = stdin;
        this.timeoutSeconds = timeoutSeconds;
    }

    /**
     * Ends the job at {@code nanos} ({@link System#nanoTime()}) instead of {@code timeoutSeconds} after it starts: the
     * deadline of {@code --timeout} over all starts of a job that restarts (docs/reference/launcher.md §8.7).
     */
    public JobSupervisor deadline(long nanos) {
        this.jobDeadline = nanos;
        return this;
    }

    /**
     * Whether ending the ranks also resumes stopped ones ({@code --max-restarts}: the next start waits for them to end);
     * otherwise a stopped rank stays stopped until the SIGKILL after the grace period, and leaves no flight record,
     * which is how the records name it (docs/observability.md).
     */
    public JobSupervisor resumeStoppedRanks(boolean resume) {
        this.resumeStopped = resume;
        return this;
    }

    /** Called from a signal handler: SIGINT 2, SIGTERM 15, SIGHUP 1. */
    public void signal(int signal) {
        events.add(new Signalled(signal));
    }

    /** Kills everything still running right away (JVM shutdown without a normal end). */
    public void emergencyStop() {
        synchronized (ranks) {
            for (RankProcess r : ranks) {
                r.kill();
            }
        }
    }

    /** Runs the job to the end and returns the launcher's exit status. */
    public int run(List<RankStart> starts) throws InterruptedException {
        for (RankStart s : starts) {
            RankProcess rp;
            try {
                rp = RankProcess.start(s.rank(), s.host(), s.boot(), sshPath, sink, s.unsetEnv());
            } catch (IOException e) {
                String what = s.host().isLocal() ? "/bin/bash" : sshPath;
                log.error("rank " + s.rank() + " on " + s.host().ssh() + ": cannot start " + what + ": " + e.getMessage()
                        + (s.host().isLocal() ? "" : "; is ssh installed and on PATH?"));
                terminateAll(RankProcess.GRACE_MILLIS);
                awaitTerminators();
                endedByLauncher = true;
                return 127;
            }
            synchronized (ranks) {
                ranks.add(rp);
            }
            rp.process().onExit().thenRun(() -> events.add(new Exited(rp)));
        }
        startStdinBroadcast();

        long deadline = timeoutSeconds == null ? Long.MAX_VALUE
                : jobDeadline != Long.MAX_VALUE ? jobDeadline : System.nanoTime() + (long) (timeoutSeconds * 1e9);
        int running = ranks.size();
        RankProcess firstFailure = null;
        int firstFailureCode = 0;
        Integer signalStatus = null;
        boolean timedOut = false;
        while (running > 0) {
            long waitNanos = deadline == Long.MAX_VALUE ? TimeUnit.SECONDS.toNanos(1) : Math.max(0, deadline - System.nanoTime());
            Event ev = events.poll(Math.min(waitNanos, TimeUnit.SECONDS.toNanos(1)), TimeUnit.NANOSECONDS);
            if (ev == null) {
                if (!timedOut && deadline != Long.MAX_VALUE && System.nanoTime() >= deadline) {
                    timedOut = true;
                    if (!stopping) {
                        log.error("job ran longer than --timeout " + formatSeconds(timeoutSeconds) + " s; ending all ranks");
                        terminateAll(RankProcess.GRACE_MILLIS);
                    }
                }
                continue;
            }
            switch (ev) {
                case Exited(RankProcess rp) -> {
                    int code = rp.process().exitValue();
                    if (code != 0 && !rp.terminatedByLauncher() && firstFailure == null && !stopping) {
                        firstFailure = rp;
                        firstFailureCode = code;
                        if (anyAlive()) {
                            terminateAll(RankProcess.GRACE_MILLIS);
                        }
                    }
                    Thread f = new Thread(() -> {
                        try {
                            rp.awaitOutput(RankProcess.DRAIN_MILLIS);
                        } catch (InterruptedException ignored) {
                            Thread.currentThread().interrupt();
                        }
                        events.add(new Finished(rp));
                    }, "finish-rank-" + rp.rank());
                    f.setDaemon(true);
                    f.start();
                }
                case Finished(RankProcess rp) -> {
                    running--;
                    rp.removeLocalPidFile();
                    report(rp);
                }
                case Signalled(int sig) -> {
                    if (signalStatus == null) {
                        signalStatus = 128 + sig;
                        if (!stopping) {
                            terminateAll(RankProcess.GRACE_MILLIS);
                        }
                    } else if (sig == 2) {
                        synchronized (ranks) {
                            ranks.forEach(RankProcess::kill); // second Ctrl-C: no grace period
                        }
                    }
                }
            }
        }
        awaitTerminators();
        endedByLauncher = signalStatus != null || timedOut;
        if (signalStatus != null) {
            return signalStatus;
        }
        if (timedOut) {
            return TIMEOUT_STATUS;
        }
        if (firstFailure != null) {
            failure = new Failure(firstFailure.rank(), firstFailure.host(), firstFailureCode);
            long killed = ranks.stream().filter(RankProcess::terminatedByLauncher).count();
            log.error("job failed: rank " + firstFailure.rank() + " on " + firstFailure.host().ssh() + " exited with code "
                    + firstFailureCode + (killed > 0 ? " (the launcher then ended " + killed + " other rank" + (killed == 1 ? "" : "s") + ")" : ""));
            return firstFailureCode;
        }
        return 0;
    }

    /** After {@link #run}: the rank that failed first on its own, when that is how the job ended. */
    public java.util.Optional<Failure> failure() {
        return java.util.Optional.ofNullable(failure);
    }

    /** After {@link #run}: whether the launcher ended the job (a signal, {@code --timeout}, a rank it could not start). */
    public boolean endedByLauncher() {
        return endedByLauncher;
    }

    /** After {@link #run}: how each rank's process ended, by rank (for the flight-record analysis). */
    public Map<Integer, FlightAnalysis.RankEnd> rankEnds() {
        Map<Integer, FlightAnalysis.RankEnd> ends = new TreeMap<>();
        synchronized (ranks) {
            for (RankProcess r : ranks) {
                if (!r.isAlive()) {
                    ends.put(r.rank(), new FlightAnalysis.RankEnd(r.process().exitValue(), r.terminatedByLauncher()));
                }
            }
        }
        return ends;
    }

    private void report(RankProcess rp) {
        int code = rp.process().exitValue();
        if (rp.terminatedByLauncher() && code != 0) {
            log.warn("Node with rank " + rp.rank() + " was killed");
        } else if (code != 0) {
            log.warn("Node with rank " + rp.rank() + " exited with code " + code);
            if (!rp.host().isLocal() && code == 255 && !rp.handshakeSeen()) {
                log.warn("rank " + rp.rank() + ": ssh to " + rp.host().ssh() + " failed (exit 255); check that 'ssh -o BatchMode=yes "
                        + rp.host().ssh() + " true' works without a password");
            } else if (!rp.handshakeSeen() && !rp.host().isLocal()) {
                log.warn("rank " + rp.rank() + ": the remote shell on " + rp.host().ssh()
                        + " ended before starting the command; its login shell must be sh, dash, bash or zsh");
            }
        } else {
            log.info("Node with rank " + rp.rank() + " completed");
        }
    }

    private boolean anyAlive() {
        synchronized (ranks) {
            return ranks.stream().anyMatch(RankProcess::isAlive);
        }
    }

    private void terminateAll(long graceMillis) {
        stopping = true;
        List<RankProcess> snapshot;
        synchronized (ranks) {
            snapshot = new ArrayList<>(ranks);
        }
        for (RankProcess r : snapshot) {
            if (!r.isAlive()) {
                continue;
            }
            Thread t = new Thread(() -> r.terminate(graceMillis, resumeStopped), "terminate-rank-" + r.rank());
            t.setDaemon(true);
            synchronized (terminators) {
                terminators.add(t);
            }
            t.start();
        }
    }

    private void awaitTerminators() throws InterruptedException {
        List<Thread> ts;
        synchronized (terminators) {
            ts = new ArrayList<>(terminators);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RankProcess.GRACE_MILLIS + RankProcess.KILL_STEP_MILLIS + 5_000);
        for (Thread t : ts) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left > 0) {
                t.join(left);
            }
        }
    }

    private void startStdinBroadcast() {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[8192];
            try {
                int n;
                while ((n = stdin.read(buf)) > 0) {
                    List<RankProcess> snapshot;
                    synchronized (ranks) {
                        snapshot = new ArrayList<>(ranks);
                    }
                    for (RankProcess r : snapshot) {
                        r.writeInput(buf, n);
                    }
                }
            } catch (IOException ignored) {
                // no usable stdin: same as end-of-file
            }
            synchronized (ranks) {
                ranks.forEach(RankProcess::closeInput);
            }
        }, "stdin-broadcast");
        t.setDaemon(true);
        t.start();
    }

    private static String formatSeconds(double s) {
        return s == Math.rint(s) ? Long.toString((long) s) : Double.toString(s);
    }
}
