package dev.jdist.launch;

import dev.jdist.DistributedException;
import dev.jdist.rendezvous.MlxHandOff;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One task of {@code jdist launch --launcher srun} whose command is not a Java program (an MLX program, a script): meets
 * the other tasks through the rendezvous exactly as {@code Distributed.init()} would ({@link MlxHandOff}), then runs the
 * command with MLX's ring variables — {@code MLX_RANK} and {@code MLX_HOSTFILE}, a hostfile with the same contents on
 * every rank — as {@code mlx.launch} would have given it. Exits with the command's status (128 + signal when a signal
 * ended it) and removes the hostfile. Signals it gets (SIGTERM from Slurm ending the step) go on to the command.
 *
 * <p>Usage: {@code java -cp jdist.jar dev.jdist.launch.HandOffTask --connections=C -- COMMAND [ARGS...]}.
 */
public final class HandOffTask {

    /** The option that sets the addresses per rank (MLX's --connections-per-ip). */
    public static final String CONNECTIONS = "--connections";
    /** Exit status when the rendezvous failed (the command never started). */
    static final int FAILED = 1;
    /** The hostfile's folder: {@code jdist-handoff-<pid>-<random>} in the temp folder. */
    static final String PREFIX = "jdist-handoff-";
    private static final Pattern FOLDER = Pattern.compile("^" + PREFIX + "(\\d+)-");

    private HandOffTask() {
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.getenv()));
    }

    static int run(List<String> args, Map<String, String> env) {
        int dash = args.indexOf("--");
        if (dash < 0 || dash + 1 >= args.size()) {
            System.err.println("jdist hand-off: usage: HandOffTask " + CONNECTIONS + "=C -- COMMAND [ARGS...]");
            return 2;
        }
        int connections = 1;
        for (String a : args.subList(0, dash)) {
            try {
                connections = Integer.parseInt(a.substring(a.indexOf('=') + 1));
                if (!a.startsWith(CONNECTIONS + "=") || connections < 1 || connections > 8) throw new NumberFormatException();
            } catch (NumberFormatException e) {
                System.err.println("jdist hand-off: '" + a + "' is not " + CONNECTIONS + "=C with C from 1 to 8");
                return 2;
            }
        }
        List<String> command = args.subList(dash + 1, args.size());
        String who = "jdist launch (task " + env.getOrDefault("SLURM_PROCID", "?") + ")";
        Path dir;
        MlxHandOff.Result r;
        try {
            removeStale(Path.of(System.getProperty("java.io.tmpdir")));
            dir = Files.createTempDirectory(PREFIX + ProcessHandle.current().pid() + "-");
        } catch (IOException e) {
            System.err.println(who + ": cannot create a folder for the MLX hostfile: " + e.getMessage());
            return FAILED;
        }
        try {
            try {
                r = MlxHandOff.prepare(env, dir, connections);
            } catch (DistributedException e) {
                System.err.println(who + ": " + e.getMessage());
                return FAILED;
            }
            ProcessBuilder pb = new ProcessBuilder(command).inheritIO();
            // the command is handed MLX's variables: they, not Slurm's, are its job
            pb.environment().remove("JDIST_JOB_SOURCE");
            pb.environment().putAll(r.environment());
            Process p;
            try {
                p = pb.start();
            } catch (IOException e) {
                System.err.println(who + ": cannot start " + command.getFirst() + ": " + e.getMessage());
                return 127;
            }
            forwardSignals(p);
            try {
                return p.waitFor();
            } catch (InterruptedException e) {
                p.destroy();
                Thread.currentThread().interrupt();
                return 130;
            }
        } finally {
            deleteQuietly(dir);
        }
    }

    /** SIGTERM, SIGINT and SIGHUP to this JVM go to the command instead of ending the JVM before it. */
    @SuppressWarnings("restriction")
    private static void forwardSignals(Process p) {
        for (String name : List.of("TERM", "INT", "HUP")) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(name), s -> {
                    try {
                        new ProcessBuilder("kill", "-s", name, Long.toString(p.pid())).start().waitFor(5, TimeUnit.SECONDS);
                    } catch (IOException | InterruptedException e) {
                        p.destroy();
                    }
                });
            } catch (IllegalArgumentException | UnsupportedOperationException ignored) {
                // not available: Slurm signals every process of the task anyway
            }
        }
    }

    /**
     * Removes the folders of hand-offs whose process no longer runs: a task that Slurm ended with SIGKILL (srun
     * cancelling a step does) had no chance to remove its hostfile, so the next hand-off on that host does.
     */
    static void removeStale(Path tmp) {
        try (var dirs = Files.list(tmp)) {
            for (Path d : dirs.toList()) {
                Matcher m = FOLDER.matcher(d.getFileName().toString());
                if (m.find() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) deleteQuietly(d);
            }
        } catch (IOException | RuntimeException ignored) {
            // another user's folder, or none: nothing to do
        }
    }

    private static void deleteQuietly(Path dir) {
        try (var files = Files.list(dir)) {
            for (Path f : new ArrayList<>(files.toList())) Files.deleteIfExists(f);
            Files.deleteIfExists(dir);
        } catch (IOException ignored) {
            // best effort: a temp folder
        }
    }
}
