package dev.jdist.testing;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

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
        Path dir = Files.createDirectories(cluster.directory().resolve("relay-" + System.nanoTime()));
        String address = cluster.address(0);
        int port = FreePorts.block(2);
        for (int p : new int[] {port, port + 1}) {
            CommandResult c = cluster.exec(0, T, "iptables", "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", address, "--dport",
                    Integer.toString(p), "-m", "mark", "!", "--mark", Integer.toString(DelayRelay.MARK), "-j", "REDIRECT",
                    "--to-ports", Integer.toString(DelayRelay.PORT));
            assertThat(c.exitCode()).as(c.stderr()).isZero();
        }
        // a buffer of 64 KiB per direction: the stream below must pause and resume the relay's reading many times
        try (DelayRelay relay = DelayRelay.start(cluster, 0, dir, DELAY_MS, Duration.ofSeconds(150), "--buffer", "65536")) {
            List<String> probe = List.of(JavaCommand.java(), "-cp", JavaCommand.classPath(), DelayRelayProbe.class.getName(),
                    address, Integer.toString(port), Long.toString(BYTES));
            CommandResult r = cluster.exec(0, T, probe.toArray(String[]::new));
            assertThat(r.exitCode()).as(r.toString()).isZero();
            String line = r.stdout().strip();
            System.out.println("[DelayRelayIT] " + line);
            assertThat(line).contains("echoed=" + BYTES + " match=true eof=true");
            long leastRoundTrip = Long.parseLong(line.replaceAll(".*rtt_min_us=(\\d+).*", "$1"));
            assertThat(leastRoundTrip).as("round trip in µs: the delay each way, twice").isGreaterThanOrEqualTo(2L * DELAY_MS * 1000);
            assertThat(line).as("a refused destination reaches the program as a failed connection")
                    .matches(".*refused=(SocketException|ConnectException|end-of-stream)$");
            assertThat(relay.log()).contains("connecting to " + address + ":" + (port + 1) + ": Connection refused");
            String totals = relay.stats();
            assertThat(totals).matches("connections=2 bytes=\\d+");
            assertThat(Long.parseLong(totals.replaceAll(".*bytes=", ""))).as("both ways of the stream and the round trips")
                    .isGreaterThanOrEqualTo(2 * BYTES + 2 * 20 * 8);
        } finally {
            cluster.exec(0, Duration.ofSeconds(20), "iptables", "-t", "nat", "-F");
        }
    }
}
