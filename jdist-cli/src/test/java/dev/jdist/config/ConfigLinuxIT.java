package dev.jdist.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.NetnsCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Linux extension ({@code --platform linux}) for real: network namespaces with sshd, real {@code ip} commands.
 * Ethernet mode reads each host's address; Thunderbolt mode runs on veth pairs standing in for Thunderbolt cables
 * (a stub {@code readlink} makes them look like {@code thunderbolt-net} interfaces in a fake sysfs tree), applies the
 * IP plan with {@code ip}, and the test proves every cable then carries traffic.
 */
@Timeout(300)
class ConfigLinuxIT {
    private static final Duration T = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void ethernetHostfileHoldsEachHostsAddress(@TempDir Path dir) throws Exception {
        try (NetnsCluster cluster = NetnsCluster.start(3, "lnx")) {
            Path out = dir.resolve("eth.json");
            CommandResult r = FakeMacHosts.jdist(cluster, "config", "--hosts", String.join(",", cluster.hostNames()),
                    "--over", "ethernet", "--platform", "linux", "--output-hostfile", out.toString(), "--verbose");
            assertThat(r.exitCode()).as(r.toString()).isZero();
            JsonNode doc = JSON.readTree(Files.readString(out));
            assertThat(doc.get("backend").asText()).isEmpty();
            for (int i = 0; i < 3; i++) {
                JsonNode h = doc.get("hosts").get(i);
                assertThat(h.get("ssh").asText()).isEqualTo(cluster.hostName(i));
                assertThat(h.get("ips").toString()).isEqualTo("[\"" + cluster.address(i) + "\"]");
            }
            assertRingJobRuns(cluster, out, "ethernet");
        }
    }

    @Test
    void thunderboltPlanIsAppliedWithIpOnVethCables(@TempDir Path dir) throws Exception {
        try (NetnsCluster cluster = NetnsCluster.start(3, "tbl")) {
            // cables: 0.tb0-1.tb0, 0.tb1-2.tb0, 1.tb1-2.tb1 (the mesh3 fixture's shape)
            int[][] cables = {{0, 0, 1, 0}, {0, 1, 2, 0}, {1, 1, 2, 1}};
            Path sys = cluster.directory().resolve("fakesys");
            String suffix = Long.toString(ProcessHandle.current().pid() % 1_000_000, 36) + Integer.toString(
                    (int) (System.nanoTime() & 0xfff), 36);
            List<String> rootSide = new ArrayList<>();
            try {
                int xdomain = 1;
                for (int k = 0; k < cables.length; k++) {
                    int a = cables[k][0];
                    int b = cables[k][2];
                    String ifA = "tb" + cables[k][1];
                    String ifB = "tb" + cables[k][3];
                    String tmpA = "jc" + suffix + k + "a";
                    String tmpB = "jc" + suffix + k + "b";
                    rootSide.add(tmpA);
                    run("ip", "link", "add", tmpA, "type", "veth", "peer", "name", tmpB);
                    run("ip", "link", "set", tmpA, "netns", cluster.namespace(a));
                    run("ip", "link", "set", tmpB, "netns", cluster.namespace(b));
                    cluster.exec(a, T, "ip", "link", "set", tmpA, "name", ifA).orThrow();
                    cluster.exec(b, T, "ip", "link", "set", tmpB, "name", ifB).orThrow();
                    fakeThunderbolt(cluster, sys, a, ifA, b, xdomain++);
                    fakeThunderbolt(cluster, sys, b, ifB, a, xdomain++);
                }
            } finally {
                for (String l : rootSide) { // only left behind if a move failed
                    CommandResult.run(T, "ip", "link", "del", l);
                }
            }
            for (int i = 0; i < 3; i++) {
                Files.writeString(cluster.stubDir(i).getParent().resolve("received.log"), "");
                cluster.putStub(i, "readlink", "#!/bin/sh\n"
                        + "if [ \"$1\" = -f ]; then case \"$2\" in /sys/class/net/*/device)\n"
                        + "  n=${2#/sys/class/net/}; n=${n%/device}; m='" + sys.resolve("map" + i) + "'/$n\n"
                        + "  if [ -f \"$m\" ]; then cat \"$m\"; exit 0; fi;; esac; fi\n"
                        + "exec /usr/bin/readlink \"$@\"\n");
                cluster.putStub(i, "sudo", "#!/bin/sh\nprintf '%s\\n' \"sudo $*\" >> '"
                        + cluster.stubDir(i).getParent().resolve("received.log") + "'\nexec \"$@\"\n");
            }
            Path dot = dir.resolve("wiring.dot");
            CommandResult dotRun = FakeMacHosts.jdist(cluster, "config", "--hosts", String.join(",", cluster.hostNames()),
                    "--platform", "linux", "--dot");
            assertThat(dotRun.exitCode()).as(dotRun.toString()).isZero();
            assertThat(dotRun.stdout()).contains("a -- b [label=\"tb0/tb0\"]", "a -- c [label=\"tb1/tb0\"]", "b -- c [label=\"tb1/tb1\"]");
            Files.writeString(dot, dotRun.stdout());

            Path out = dir.resolve("ring.json");
            CommandResult r = FakeMacHosts.jdist(cluster, "config", "--hosts", String.join(",", cluster.hostNames()),
                    "--platform", "linux", "--backend", "ring", "--auto-setup", "--output-hostfile", out.toString());
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(Files.readAllLines(cluster.stubDir(0).getParent().resolve("received.log")).stream()
                    .filter(l -> !l.equals("sudo ls")).toList()).containsExactly(
                    "sudo ip addr replace 192.168.0.1/30 dev tb0", "sudo ip link set tb0 up",
                    "sudo ip route replace 192.168.0.2/32 dev tb0", "sudo ip addr replace 192.168.0.5/30 dev tb1",
                    "sudo ip link set tb1 up", "sudo ip route replace 192.168.0.6/32 dev tb1");
            JsonNode doc = JSON.readTree(Files.readString(out));
            assertThat(doc.get("backend").asText()).isEqualTo("ring");
            assertThat(doc.get("hosts").toString()).isEqualTo("[{\"ssh\":\"tbl0\",\"ips\":[\"192.168.0.5\"],\"rdma\":[]},"
                    + "{\"ssh\":\"tbl1\",\"ips\":[\"192.168.0.2\"],\"rdma\":[]},{\"ssh\":\"tbl2\",\"ips\":[\"192.168.0.10\"],\"rdma\":[]}]");
            // every "cable" now carries its /30: each end reaches the other
            String[][] ends = {{"0", "192.168.0.2"}, {"1", "192.168.0.1"}, {"0", "192.168.0.6"}, {"2", "192.168.0.5"},
                    {"1", "192.168.0.10"}, {"2", "192.168.0.9"}};
            for (String[] e : ends) {
                // a TCP connection to a closed port is refused by the peer's kernel: proof the packet got there and back
                CommandResult probe = cluster.exec(Integer.parseInt(e[0]), T, "timeout", "5", "bash", "-c",
                        "exec 3<>/dev/tcp/" + e[1] + "/9");
                assertThat(probe.stderr()).as(probe.toString()).contains("Connection refused");
            }
            assertRingJobRuns(cluster, out, "veth cables");
            // and a rerun is idempotent (ip ... replace)
            CommandResult again = FakeMacHosts.jdist(cluster, "config", "--hosts", String.join(",", cluster.hostNames()),
                    "--platform", "linux", "--backend", "ring", "--auto-setup", "--output-hostfile", out.toString());
            assertThat(again.exitCode()).as(again.toString()).isZero();
        }
    }

    /**
     * {@code jdist launch --hostfile HOSTFILE examples/AllSum.java}: three ranks started over ssh in the namespaces,
     * connected by the ring backend on the hostfile's addresses; each prints the sum 3.
     */
    private static void assertRingJobRuns(NetnsCluster cluster, Path hostfile, String what) {
        Path root = repositoryRoot();
        CommandResult job = FakeMacHosts.jdistIn(cluster, root, "launch", "--hostfile", hostfile.toString(), "--backend",
                "ring", "examples/AllSum.java");
        assertThat(job.timedOut()).as("ring job over " + what + " timed out: " + job).isFalse();
        assertThat(job.exitCode()).as("ring job over " + what + ": " + job).isZero();
        for (int rank = 0; rank < 3; rank++) {
            assertThat(job.stdout()).as(job.toString()).contains(rank + " array([3, 3, 3, ..., 3, 3, 3], dtype=float32)");
        }
    }

    private static Path repositoryRoot() {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("examples/AllSum.java"))) {
            dir = dir.getParent();
        }
        assertThat(dir).as("repository root above " + System.getProperty("user.dir")).isNotNull();
        return dir;
    }

    /**
     * Makes {@code iface} on host {@code host} look like a thunderbolt-net interface whose XDomain peer is host {@code peer}:
     * {@code .../thunderbolt/domainH/H-0/unique_id} is the host's id, {@code H-0/H-X/unique_id} the peer's, and the
     * interface's device is {@code H-X/H-X.0}.
     */
    private static void fakeThunderbolt(NetnsCluster cluster, Path sys, int host, String iface, int peer, int xdomain)
            throws Exception {
        Path router = sys.resolve("devices/pci0000:00/thunderbolt/domain" + host).resolve(host + "-0");
        Path x = router.resolve(host + "-" + xdomain);
        Path service = x.resolve(host + "-" + xdomain + ".0");
        Files.createDirectories(service);
        Files.writeString(router.resolve("unique_id"), uuid(host) + "\n");
        Files.writeString(x.resolve("unique_id"), uuid(peer) + "\n");
        Files.writeString(x.resolve("rx_speed"), "20.0 Gb/s\n"); // per lane, as Linux reports it
        Files.writeString(x.resolve("rx_lanes"), "2\n");
        Path map = sys.resolve("map" + host);
        Files.createDirectories(map);
        Files.writeString(map.resolve(iface), service + "\n");
    }

    private static String uuid(int host) {
        return String.format("%08x-0000-0000-0000-%012d", 0xdead0000 + host, host);
    }

    private static void run(String... cmd) {
        CommandResult.run(T, cmd).orThrow();
    }

}
