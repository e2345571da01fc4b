package dev.jdist.launch;

import dev.jdist.hosts.HostEntry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One rank's OS process on the launcher's machine: {@code /bin/bash -c BOOT} for a local rank, or
 * {@code ssh -tt ... HOST BOOT} for a remote one (docs/reference/launcher.md §6.1). Pumps its output to the {@link OutputSink}
 * (reading to end-of-file even after the process exits, bounded), takes the handshake line off stdout,
 * and knows how to terminate itself (§8.3).
 */
public final class RankProcess {

    /** Grace period between SIGTERM and SIGKILL. */
    public static final long GRACE_MILLIS = 5_000;
    /** Deadline of a remote kill step. */
    public static final long KILL_STEP_MILLIS = 20_000;
    /** How long output is still drained after the process ended (a leftover descendant may hold the pipe). */
    public static final long DRAIN_MILLIS = 2_000;

    private final int rank;
    private final HostEntry host;
    private final List<String> command;
    private final OutputSink sink;
    private final String sshPath;
    private Process process;
    private volatile String pidFile;
    private volatile boolean handshake;
    private volatile boolean terminatedByLauncher;
    private final CountDownLatch pumpsDone = new CountDownLatch(2);
    private final Object stdinLock = new Object();
    private OutputStream stdin;
    /** Input for a remote rank that arrives before its handshake (the pseudo-terminal would echo it before stty -echo). */
    private ByteArrayOutputStream heldInput = new ByteArrayOutputStream();
    private boolean closeAfterHeld;

    private RankProcess(int rank, HostEntry host, List<String> command, OutputSink sink, String sshPath) {
        this.rank = rank;
        this.host = host;
        this.command = command;
        this.sink = sink;
        this.sshPath = sshPath;
    }

    /** The OS command that starts rank {@code plan.rank()} with bootstrap {@code boot}. */
    public static List<String> command(HostEntry host, String boot, String sshPath) {
        if (host.isLocal()) {
            return List.of("/bin/bash", "-c", boot);
        }
        return List.of(sshPath, "-tt", "-o", "LogLevel=QUIET", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                "-e", "none", host.ssh(), boot);
    }

    /** Starts the rank; {@code unsetEnv} names launcher variables a local rank must not inherit. */
    public static RankProcess start(int rank, HostEntry host, String boot, String sshPath, OutputSink sink,
                                    List<String> unsetEnv) throws IOException {
        RankProcess rp = new RankProcess(rank, host, command(host, boot, sshPath), sink, sshPath);
        ProcessBuilder pb = new ProcessBuilder(rp.command);
        Map<String, String> env = pb.environment();
        unsetEnv.forEach(env::remove);
        sink.open(rank);
        rp.process = pb.start();
        rp.stdin = rp.process.getOutputStream();
        rp.pump(rp.process.getInputStream(), false);
        rp.pump(rp.process.getErrorStream(), true);
        return rp;
    }

    public int rank() {
        return rank;
    }

    public HostEntry host() {
        return host;
    }

    public Process process() {
        return process;
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public boolean handshakeSeen() {
        return handshake;
    }

    public boolean terminatedByLauncher() {
        return terminatedByLauncher;
    }

    /** Waits until both output streams reached end-of-file, at most {@code millis}. */
    public boolean awaitOutput(long millis) throws InterruptedException {
        return pumpsDone.await(millis, TimeUnit.MILLISECONDS);
    }

    /** Writes a stdin chunk; false when this rank can no longer take input (it is then dropped from the broadcast). */
    public boolean writeInput(byte[] buf, int n) {
        synchronized (stdinLock) {
            if (stdin == null || !process.isAlive()) {
                return false;
            }
            if (heldInput != null && !host.isLocal()) {
                heldInput.write(buf, 0, n);
                return true;
            }
            try {
                stdin.write(buf, 0, n);
                stdin.flush();
                return true;
            } catch (IOException e) {
                closeInputQuietly();
                return false;
            }
        }
    }

    /** Closes the rank's stdin (end-of-file for a local rank). */
    public void closeInput() {
        synchronized (stdinLock) {
            if (heldInput != null && !host.isLocal()) {
                closeAfterHeld = true;
                return;
            }
            closeInputQuietly();
        }
    }

    /** The handshake arrived (terminal echo is off now): deliver the input held back so far. */
    private void releaseHeldInput() {
        synchronized (stdinLock) {
            ByteArrayOutputStream held = heldInput;
            heldInput = null;
            if (stdin == null || held == null) {
                return;
            }
            try {
                if (held.size() > 0) {
                    held.writeTo(stdin);
                    stdin.flush();
                }
            } catch (IOException e) {
                closeInputQuietly();
                return;
            }
            if (closeAfterHeld) {
                closeInputQuietly();
            }
        }
    }

    private void closeInputQuietly() {
        if (stdin != null) {
            try {
                stdin.close();
            } catch (IOException ignored) {
                // already closed
            }
            stdin = null;
        }
    }

    private void pump(InputStream in, boolean stderr) {
        Thread t = new Thread(() -> {
            try (in) {
                byte[] buf = new byte[8192];
                ByteArrayOutputStream pending = stderr ? null : new ByteArrayOutputStream();
                int n;
                while ((n = in.read(buf)) > 0) {
                    if (pending != null) {
                        pending.write(buf, 0, n);
                        pending = scanForHandshake(pending);
                        continue;
                    }
                    sink.write(rank, stderr, buf, 0, n);
                }
                if (pending != null && pending.size() > 0) {
                    byte[] rest = pending.toByteArray();
                    sink.write(rank, false, rest, 0, rest.length);
                }
            } catch (IOException ignored) {
                // the pipe was closed under us: the process is gone
            } finally {
                sink.close(rank, stderr);
                pumpsDone.countDown();
            }
        }, "rank-" + rank + (stderr ? "-stderr" : "-stdout"));
        t.setDaemon(true);
        t.start();
    }

    /**
     * Forwards complete lines before the handshake, records the handshake (not forwarded), and returns null once
     * it was seen (everything after it is forwarded raw), else the still-incomplete remainder.
     */
    private ByteArrayOutputStream scanForHandshake(ByteArrayOutputStream pending) {
        byte[] data = pending.toByteArray();
        int start = 0;
        for (int i = 0; i < data.length; i++) {
            if (data[i] != '\n') {
                continue;
            }
            String line = new String(data, start, i - start, StandardCharsets.UTF_8);
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            if (line.startsWith(Bootstrap.HANDSHAKE)) {
                pidFile = line.substring(Bootstrap.HANDSHAKE.length());
                handshake = true;
                releaseHeldInput();
                if (i + 1 < data.length) {
                    sink.write(rank, false, data, i + 1, data.length - i - 1);
                }
                return null;
            }
            sink.write(rank, false, data, start, i + 1 - start);
            start = i + 1;
        }
        ByteArrayOutputStream rest = new ByteArrayOutputStream();
        rest.write(data, start, data.length - start);
        return rest;
    }

    /**
     * Terminates the rank (§8.3): SIGTERM to the local process (and, for a local rank, its descendants; with
     * {@code resumeStopped}, SIGCONT to those of them that are stopped), SIGKILL after {@code graceMillis}; then, for a
     * remote rank that sent its handshake, the kill step on its host.
     */
    public void terminate(long graceMillis, boolean resumeStopped) {
        if (process.isAlive()) {
            terminatedByLauncher = true;
            List<ProcessHandle> family = new ArrayList<>();
            if (host.isLocal()) {
                process.descendants().forEach(family::add);
            }
            process.destroy();
            family.forEach(ProcessHandle::destroy);
            if (resumeStopped && host.isLocal()) {
                continueStopped(process.toHandle(), family);
            }
            try {
                if (!process.waitFor(graceMillis, TimeUnit.MILLISECONDS)) {
                    if (host.isLocal()) {
                        process.descendants().forEach(family::add);
                    }
                    process.destroyForcibly();
                    process.waitFor(2, TimeUnit.SECONDS);
                }
                family.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        cleanUpRemote(graceMillis);
    }

    /**
     * A stopped process (SIGSTOP) acts on the SIGTERM just sent only once it runs again: SIGCONT to the stopped ones
     * lets them end within the grace period instead of waiting for the SIGKILL after it.
     */
    private static void continueStopped(ProcessHandle self, List<ProcessHandle> family) {
        List<String> stopped = new ArrayList<>();
        for (ProcessHandle h : java.util.stream.Stream.concat(java.util.stream.Stream.of(self), family.stream()).toList()) {
            try {
                String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + h.pid() + "/stat"));
                int close = stat.lastIndexOf(')');
                if (close > 0 && close + 2 < stat.length() && (stat.charAt(close + 2) == 'T' || stat.charAt(close + 2) == 't')) {
                    stopped.add(Long.toString(h.pid()));
                }
            } catch (java.io.IOException | RuntimeException ignored) {
                // no /proc (macOS) or the process is gone: nothing to continue
            }
        }
        if (!stopped.isEmpty()) {
            List<String> cmd = new ArrayList<>(List.of("kill", "-CONT"));
            cmd.addAll(stopped);
            Executables.output(cmd, 5);
        }
    }

    /** Deletes a local rank's pid file once the rank has ended (remote ones go in the kill step). */
    public void removeLocalPidFile() {
        String pf = pidFile;
        if (pf != null && host.isLocal() && !process.isAlive()) {
            try {
                Files.deleteIfExists(Path.of(pf));
            } catch (IOException | RuntimeException ignored) {
                // best effort
            }
        }
    }

    /** SIGKILL right away (second Ctrl-C). */
    public void kill() {
        if (process.isAlive()) {
            terminatedByLauncher = true;
            if (host.isLocal()) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
            }
            process.destroyForcibly();
        }
    }

    /** Runs the kill step for a remote rank that was terminated; removes a local rank's pid file. */
    private void cleanUpRemote(long graceMillis) {
        String pf = pidFile;
        if (pf == null || !terminatedByLauncher) {
            return;
        }
        if (host.isLocal()) {
            try {
                Files.deleteIfExists(Path.of(pf));
            } catch (IOException | RuntimeException ignored) {
                // best effort
            }
            return;
        }
        int graceSeconds = (int) Math.max(1, Math.min(5, graceMillis / 1000));
        ProcessBuilder pb = new ProcessBuilder(sshPath, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                host.ssh(), Bootstrap.killScript(pf, graceSeconds));
        pb.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        try {
            Process k = pb.start();
            if (!k.waitFor(KILL_STEP_MILLIS, TimeUnit.MILLISECONDS)) {
                k.destroyForcibly();
            }
        } catch (IOException e) {
            // ssh missing: nothing more we can do for this host
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
