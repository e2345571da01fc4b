package dev.jdist.testing;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The delaying relay (bench/lib/delay-relay, which the cluster harness, the chaos suite and LivenessAcrossHostsIT use
 * where the kernel has no sch_netem) in one namespace: it delays each way by at least what it is asked, carries a
 * stream larger than its buffer intact and in order both ways, passes the end of the stream on, and turns a refused
 * connection into a failed one that its log names. Only lower bounds on time are checked: a slow machine cannot fail
 * them, a relay that does not delay does.
 */
@Timeout(180)
class DelayRelayIT {
    private static final Duration T = Duration.ofSeconds(90);
    private static final int DELAY_MS = 20;
    private static final long BYTES = 6L << 20;
    private static NetnsCluster cluster;

    @BeforeAll
    static void startCluster() {
        Requirements.netnsCluster();
        Requirements.require(Requirements.command("iptables", "iptables"), Requirements.command("gcc", "gcc"));
        cluster = NetnsCluster.start(1);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    @Test
    void delaysEachWayCarriesBytesInOrderPassesTheEndOnAndNamesARefusedDestination() throws Exception {
        Path relay = repoRoot().resolve("bench/lib/delay-relay");
        Path dir = Files.createDirectories(cluster.directory().resolve("relay-" + System.nanoTime()));
        Path stats = dir.resolve("stats");
        Path log = dir.resolve("relay.log");
        Path pidFile = dir.resolve("relay.pid");
        String address = cluster.address(0);
        int port = FreePorts.block(2);
        for (int p : new int[] {port, port + 1}) {
            CommandResult c = cluster.exec(0, T, "iptables", "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", address, "--dport",
                    Integer.toString(p), "-m", "mark", "!", "--mark", "7", "-j", "REDIRECT", "--to-ports", "7777");
            assertThat(c.exitCode()).as(c.stderr()).isZero();
        }
        // a buffer of 64 KiB per direction: the stream below must pause and resume the relay's reading many times
        String start = "echo $$ > " + pidFile + "; exec " + relay + " --port 7777 --delay-ms " + DELAY_MS
                + " --mark 7 --lifetime 150 --buffer 65536 --stats " + stats + " > " + log + " 2>&1";
        CompletableFuture<CommandResult> relayRun = CompletableFuture.supplyAsync(() -> cluster.exec(0, T, "sh", "-c", start),
                task -> Thread.ofVirtual().start(task));
        try {
            long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (!Files.exists(stats) && !relayRun.isDone() && System.nanoTime() < until) Thread.sleep(100);
            assertThat(stats).as("the relay started (it builds with gcc first): %s", read(log)).exists();

            List<String> probe = new ArrayList<>(List.of(JavaCommand.java(), "-cp", JavaCommand.classPath(),
                    DelayRelayProbe.class.getName(), address, Integer.toString(port), Long.toString(BYTES)));
            CommandResult r = cluster.exec(0, T, probe.toArray(String[]::new));
            assertThat(r.exitCode()).as(r.toString()).isZero();
            String line = r.stdout().strip();
            System.out.println("[DelayRelayIT] " + line);
            assertThat(line).contains("echoed=" + BYTES + " match=true eof=true");
            long leastRoundTrip = Long.parseLong(line.replaceAll(".*rtt_min_us=(\\d+).*", "$1"));
            assertThat(leastRoundTrip).as("round trip in µs: the delay each way, twice").isGreaterThanOrEqualTo(2L * DELAY_MS * 1000);
            assertThat(line).as("a refused destination reaches the program as a failed connection")
                    .matches(".*refused=(SocketException|ConnectException|end-of-stream)$");
            assertThat(read(log)).contains("connecting to " + address + ":" + (port + 1) + ": Connection refused");
            String totals = read(stats).strip();
            assertThat(totals).matches("connections=2 bytes=\\d+");
            assertThat(Long.parseLong(totals.replaceAll(".*bytes=", ""))).as("both ways of the stream and the round trips")
                    .isGreaterThanOrEqualTo(2 * BYTES + 2 * 20 * 8);
        } finally {
            String pid = Files.exists(pidFile) ? read(pidFile).strip() : "";
            if (!pid.isEmpty()) cluster.exec(0, Duration.ofSeconds(20), "kill", "-KILL", pid);
            relayRun.join();
            cluster.exec(0, Duration.ofSeconds(20), "iptables", "-t", "nat", "-F");
        }
    }

    /** The repository's root: the nearest folder above the working directory that has bench/lib/delay-relay. */
    private static Path repoRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isExecutable(p.resolve("bench/lib/delay-relay"))) return p;
        }
        throw new IllegalStateException("bench/lib/delay-relay not found above " + Path.of("").toAbsolutePath());
    }

    private static String read(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (java.io.IOException e) {
            return "<" + e + ">";
        }
    }
}
