package dev.jdist.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The delaying relay (bench/lib/delay-relay, built with gcc on first use) running in one host of a {@link NetnsCluster},
 * on {@link #PORT}, its own connections marked {@link #MARK}: the test adds the iptables REDIRECT rules that send
 * connections to it. Its pid, totals ("connections=N bytes=B") and log go to a folder of the test's; {@link #close}
 * ends it by that pid. It also ends by itself after its lifetime.
 */
public final class DelayRelay implements AutoCloseable {
    /** The port the relay listens on, the REDIRECT rules' {@code --to-ports}. */
    public static final int PORT = 7777;
    /** The relay's own connections carry this mark, which the REDIRECT rules must skip ({@code -m mark ! --mark 7}). */
    public static final int MARK = 7;

    private final NetnsCluster cluster;
    private final int host;
    private final Path pidFile;
    private final Path stats;
    private final Path log;
    private final CompletableFuture<CommandResult> run;

    private DelayRelay(NetnsCluster cluster, int host, Path dir, CompletableFuture<CommandResult> run) {
        this.cluster = cluster;
        this.host = host;
        this.pidFile = dir.resolve("relay.pid");
        this.stats = dir.resolve("relay-stats");
        this.log = dir.resolve("relay.log");
        this.run = run;
    }

    /**
     * Starts the relay in {@code host}'s namespace, {@code delayMs} each way, for at most {@code lifetime}, with the
     * relay's further {@code options} (say {@code --buffer 65536}); returns once it is listening (its totals file
     * exists), or throws with its log after 20 s (building it comes first).
     */
    public static DelayRelay start(NetnsCluster cluster, int host, Path dir, double delayMs, Duration lifetime, String... options)
            throws InterruptedException {
        Path relay = TestFiles.repoRoot().resolve("bench/lib/delay-relay");
        List<String> argv = new ArrayList<>(List.of(relay.toString(), "--port", Integer.toString(PORT), "--delay-ms",
                Double.toString(delayMs), "--mark", Integer.toString(MARK), "--lifetime", Long.toString(lifetime.toSeconds()),
                "--stats", dir.resolve("relay-stats").toString()));
        argv.addAll(List.of(options));
        // the shell writes its pid and becomes the relay (exec), so the pid is the relay's
        String line = "echo $$ > " + dir.resolve("relay.pid") + "; exec " + String.join(" ", argv) + " > " + dir.resolve("relay.log")
                + " 2>&1";
        Duration bound = lifetime.plusSeconds(30);
        DelayRelay r = new DelayRelay(cluster, host, dir, CompletableFuture.supplyAsync(() -> cluster.exec(host, bound, "sh", "-c", line),
                task -> Thread.ofVirtual().start(task)));
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!Files.exists(r.stats) && !r.run.isDone() && System.nanoTime() < until) Thread.sleep(100);
        if (!Files.exists(r.stats)) {
            r.close();
            throw new IllegalStateException("the delaying relay did not start in host " + host + " (it builds with gcc first): "
                    + r.log());
        }
        return r;
    }

    /** Its running totals, "connections=N bytes=B" (connections opened, bytes delivered). */
    public String stats() {
        return read(stats).strip();
    }

    /** What it printed: its start line, and one line per connection it could not open. */
    public String log() {
        return read(log);
    }

    /** Ends the relay by its pid and waits for its command to return. */
    @Override
    public void close() {
        String pid = read(pidFile).strip();
        if (!pid.isEmpty()) cluster.exec(host, Duration.ofSeconds(20), "kill", "-KILL", pid);
        run.join();
    }

    private static String read(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (IOException e) {
            return "<" + e + ">";
        }
    }
}
