package dev.jdist.doctor;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.NetnsCluster;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code jdist doctor} against real hosts: network namespaces running sshd. */
class DoctorIT {
    private static final Duration T = Duration.ofSeconds(150);

    @Test
    @Timeout(480)
    void healthyHostsPassAndAnUnreachableHostOrATakenPortIsNamedWithTheFix() throws Exception {
        Requirements.netnsCluster();
        try (NetnsCluster cluster = NetnsCluster.start(2)) {
            Map<String, String> env = Map.of("PATH", cluster.launcherPath());
            String hosts = cluster.hostName(0) + "," + cluster.hostName(1);

            CommandResult ok = JdistCli.run(T, env, "doctor", "--hosts", hosts, "-n", "2", "-p", "40123", "--connect-timeout", "20", "pom.xml");
            assertThat(ok.exitCode()).as(ok.stdout() + ok.stderr()).isZero();
            assertThat(ok.stdout()).contains("ok    " + cluster.hostName(0) + " ").contains("ssh", "java", "jdist", "program")
                    .contains("all ").contains("checks passed");

            // A listener on host 1's first ring port: the job would fail to bind there.
            // Hosts by alias have no IP for the ring, so use the addresses (the launcher's ring needs IPs anyway).
            String byIp = cluster.address(0) + "," + cluster.address(1);
            Path listenerSource = cluster.directory().resolve("Listen.java");
            Files.writeString(listenerSource, "public class Listen { public static void main(String[] a) throws Exception {"
                    + " var s = new java.net.ServerSocket(); s.bind(new java.net.InetSocketAddress(a[0], Integer.parseInt(a[1])));"
                    + " System.out.println(\"listening\"); Thread.sleep(60000); } }");
            Process nc = new ProcessBuilder("ip", "netns", "exec", cluster.namespace(1),
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(), listenerSource.toString(),
                    cluster.address(1), "40125").redirectErrorStream(true).start();
            try {
                assertThat(new java.io.BufferedReader(new java.io.InputStreamReader(nc.getInputStream())).readLine())
                        .isEqualTo("listening");
                CommandResult taken = JdistCli.run(T, env, "doctor", "--hosts", byIp, "-n", "2", "-p", "40123", "--connect-timeout", "20");
                assertThat(taken.exitCode()).as(taken.stdout() + taken.stderr()).isEqualTo(1);
                assertThat(taken.stdout()).contains("FAIL").contains(cluster.address(1) + ":40125").contains("--starting-port");
            } finally {
                nc.destroyForcibly().waitFor();
            }

            long t0 = System.nanoTime();
            CommandResult unreachable = JdistCli.run(T, env, "doctor", "--hosts", cluster.unusedAddress(), "--connect-timeout", "3");
            assertThat(unreachable.exitCode()).isEqualTo(1);
            assertThat(unreachable.stdout()).contains("FAIL").contains(cluster.unusedAddress()).contains("ssh").contains("fix:");
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(60));
        }
    }

    @Test
    @Timeout(60)
    void aLocalPortInUseFails() throws Exception {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            int port = s.getLocalPort();
            CommandResult r = JdistCli.run(T, Map.of(), "doctor", "-n", "1", "-p", Integer.toString(port));
            assertThat(r.exitCode()).as(r.stdout() + r.stderr()).isEqualTo(1);
            assertThat(r.stdout()).contains("FAIL").contains("127.0.0.1:" + port);
        }
    }

    @Test
    @Timeout(60)
    void aBadHostfileIsAUsageError() {
        CommandResult r = JdistCli.run(T, Map.of(), "doctor", "--hostfile", "/nonexistent/hosts.json");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.stderr()).contains("/nonexistent/hosts.json");
    }
}
