package dev.jdist.testing;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** The test fixture itself: namespaces with sshd, ssh aliases, stubs on PATH, isolation, full teardown. */
@Timeout(120)
class NetnsClusterIT {

    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void hostsAreReachableOverSshWithStubsAndAreCleanedUp() {
        NetnsCluster cluster = NetnsCluster.start(3);
        String ns0;
        try (cluster) {
            ns0 = cluster.namespace(0);
            cluster.putStub(1, "system_profiler", "#!/bin/sh\necho stub-on-$JDIST_TEST_HOST \"$@\"\n");
            for (int i = 0; i < 3; i++) {
                CommandResult r = cluster.ssh(i, T, "echo $JDIST_TEST_HOST; ip -4 -o addr show eth0");
                assertThat(r.exitCode()).as(r.toString()).isZero();
                assertThat(r.stdout()).contains(cluster.hostName(i)).contains(cluster.address(i) + "/24");
            }
            // raw addresses work too (the Host * block applies), through the wrapper found on PATH
            CommandResult byIp = CommandResult.run(T, null,
                    java.util.Map.of("PATH", cluster.launcherPath()), null,
                    java.util.List.of("sh", "-c", "ssh -o BatchMode=yes " + cluster.address(2) + " echo hi"));
            assertThat(byIp.exitCode()).as(byIp.toString()).isZero();
            assertThat(byIp.stdout().trim()).isEqualTo("hi");

            CommandResult stub = cluster.ssh(1, T, "system_profiler SPThunderboltDataType");
            assertThat(stub.stdout().trim()).isEqualTo("stub-on-node1 SPThunderboltDataType");
            CommandResult home = cluster.ssh(2, T, "echo $HOME");
            assertThat(home.stdout().trim()).isEqualTo(cluster.homeDir(2).toString());
            // each host has a temporary folder of its own, as separate machines do (Open MPI's daemons keep their
            // session files there; a shared /tmp made them share one folder, reliability.md)
            for (int i = 0; i < 3; i++) {
                CommandResult tmp = cluster.ssh(i, T, "echo \"$TMPDIR\"; test -d \"$TMPDIR\" && test -w \"$TMPDIR\" && echo writable");
                assertThat(tmp.stdout().lines().toList()).as(tmp.toString())
                        .containsExactly(cluster.homeDir(i).resolve("tmp").toString(), "writable");
            }
            CommandResult noStub = cluster.ssh(0, T, "command -v system_profiler || echo none");
            assertThat(noStub.stdout().trim()).isEqualTo("none");

            // namespace to namespace over the bridge
            CommandResult tcp = cluster.exec(0, T, "bash", "-c",
                    "exec 3<>/dev/tcp/" + cluster.address(1) + "/22 && head -c 7 <&3");
            assertThat(tcp.stdout()).startsWith("SSH-2.0");

            // nobody holds the unused address: ssh fails (255) within the connect timeout
            CommandResult down = CommandResult.run(T, "ssh", "-F", cluster.sshConfig().toString(),
                    "-o", "ConnectTimeout=2", cluster.unusedAddress(), "true");
            assertThat(down.exitCode()).isEqualTo(255);

            assertThat(cluster.processesIn(0)).isEmpty();
        }
        assertThat(CommandResult.run(T, "ip", "netns", "list").stdout()).doesNotContain(ns0);
        assertThat(Files.exists(cluster.directory())).isFalse();
        assertThat(CommandResult.run(T, "ip", "link", "show").stdout()).doesNotContain("jb" + ns0.split("-")[1]);
    }
}
