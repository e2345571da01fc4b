package dev.jdist.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** The outcome of running a command to completion with a deadline (tests only). */
public record CommandResult(List<String> command, int exitCode, String stdout, String stderr, boolean timedOut) {

    /** Exit code used when the command did not finish within its deadline (it is killed). */
    public static final int TIMED_OUT = -1;

    public static CommandResult run(Duration timeout, String... command) {
        return run(timeout, null, Map.of(), null, List.of(command));
    }

    /**
     * Runs {@code command} with extra environment {@code env}, optional working directory and stdin text,
     * and waits at most {@code timeout}; on timeout the process and its descendants are killed.
     */
    public static CommandResult run(Duration timeout, Path cwd, Map<String, String> env, String stdin, List<String> command) {
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(env);
        if (cwd != null) {
            pb.directory(cwd.toFile());
        }
        if (stdin == null) {
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        }
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            return new CommandResult(command, 127, "", "cannot start " + command + ": " + e.getMessage(), false);
        }
        CompletableFuture<String> out = drain(p.getInputStream());
        CompletableFuture<String> err = drain(p.getErrorStream());
        try {
            if (stdin != null) {
                try (var in = p.getOutputStream()) {
                    in.write(stdin.getBytes(StandardCharsets.UTF_8));
                } catch (IOException ignored) {
                    // the command did not read its input
                }
            }
            boolean done = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!done) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
            }
            String o = out.get(5, TimeUnit.SECONDS);
            String e = err.get(5, TimeUnit.SECONDS);
            return new CommandResult(command, done ? p.exitValue() : TIMED_OUT, o, e, !done);
        } catch (Exception e) {
            p.destroyForcibly();
            throw new IllegalStateException("running " + command + ": " + e, e);
        }
    }

    private static CompletableFuture<String> drain(InputStream in) {
        return CompletableFuture.supplyAsync(() -> {
            try (in) {
                ByteArrayOutputStream buf = new ByteArrayOutputStream();
                in.transferTo(buf);
                return buf.toString(StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, r -> Thread.ofVirtual().start(r));
    }

    public boolean ok() {
        return exitCode == 0;
    }

    /** Throws with the full output unless the command exited 0. */
    public CommandResult orThrow() {
        if (exitCode != 0) {
            throw new IllegalStateException(this.toString());
        }
        return this;
    }

    @Override
    public String toString() {
        return "command " + command + (timedOut ? " timed out" : " exited " + exitCode)
                + "\n--- stdout ---\n" + stdout + "\n--- stderr ---\n" + stderr;
    }
}
