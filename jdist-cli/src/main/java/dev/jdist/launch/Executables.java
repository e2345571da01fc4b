package dev.jdist.launch;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Finding programs on the launcher's PATH at the time they are needed, and running small helper commands. */
public final class Executables {
    private Executables() {
    }

    public static Optional<Path> onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return Optional.of(p.toAbsolutePath());
            }
        }
        return Optional.empty();
    }

    /** The ssh the launcher runs to start remote ranks: the first on PATH, else plain {@code ssh}. */
    public static String ssh() {
        return onPath("ssh").map(Path::toString).orElse("ssh");
    }

    /** What a helper command printed (stdout and stderr together) and its exit status (124: timed out; 127: could not start). */
    public record Run(int status, String output) {
    }

    /** Runs {@code argv} with stdin from /dev/null and returns stdout+stderr, or empty on any failure or after {@code seconds}. */
    public static Optional<String> output(List<String> argv, int seconds) {
        Run r = run(argv, seconds);
        return r.status() == 124 || r.status() == 127 ? Optional.empty() : Optional.of(r.output());
    }

    /** Runs {@code argv} with stdin from /dev/null, bounded by {@code seconds}; the process is killed when it overruns. */
    public static Run run(List<String> argv, int seconds) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            var out = new java.util.concurrent.CompletableFuture<String>();
            Thread t = new Thread(() -> {
                try (var in = p.getInputStream()) {
                    out.complete(new String(in.readAllBytes(), StandardCharsets.UTF_8));
                } catch (IOException e) {
                    out.complete("");
                }
            });
            t.setDaemon(true);
            t.start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Run(124, "timed out after " + seconds + " s");
            }
            return new Run(p.exitValue(), out.get(2, TimeUnit.SECONDS));
        } catch (Exception e) {
            return new Run(127, e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }
}
