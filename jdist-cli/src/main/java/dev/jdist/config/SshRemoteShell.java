package dev.jdist.config;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link RemoteShell} through the {@code ssh} found on {@code PATH}, with {@code -o BatchMode=yes -o ConnectTimeout=5}
 * so that a host never prompts, and a deadline after which ssh and its children are killed.
 */
public final class SshRemoteShell implements RemoteShell {

    @Override
    public List<String> commandLine(String host, List<String> remoteArgs) {
        List<String> argv = new ArrayList<>(List.of("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", host));
        argv.addAll(remoteArgs);
        return argv;
    }

    @Override
    public Result run(String host, List<String> remoteArgs, Duration deadline) {
        ProcessBuilder pb = new ProcessBuilder(commandLine(host, remoteArgs))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            return new Result(127, "", "could not start ssh (" + e.getMessage() + "); is ssh installed and on PATH?", false);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread outPump = Thread.ofVirtual().start(() -> pump(process.getInputStream(), out));
        Thread errPump = Thread.ofVirtual().start(() -> pump(process.getErrorStream(), err));
        boolean finished;
        try {
            finished = process.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
            outPump.join(Duration.ofSeconds(5));
            errPump.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            return new Result(-1, "", "interrupted", true);
        }
        String stdout;
        String stderr;
        synchronized (out) {
            stdout = out.toString(StandardCharsets.UTF_8);
        }
        synchronized (err) {
            stderr = err.toString(StandardCharsets.UTF_8);
        }
        return new Result(finished ? process.exitValue() : -1, stdout, stderr, !finished);
    }

    private static void pump(InputStream in, ByteArrayOutputStream sink) {
        byte[] buf = new byte[8192];
        try (in) {
            int n;
            while ((n = in.read(buf)) > 0) {
                synchronized (sink) {
                    sink.write(buf, 0, n);
                }
            }
        } catch (IOException e) {
            // the process was killed; keep what arrived
        }
    }

}
