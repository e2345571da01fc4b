package dev.jdist.testing;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cluster as bench/cluster/run.sh holds it: NetnsClusterMain describes it in a bash file the script sources,
 * and removes it when the script (the watched process) ends, however it ends; here with two networks (eth0, eth1), as
 * {@code run.sh --nics 2} asks.
 */
@Timeout(120)
class NetnsClusterMainIT {

    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void describesTheClusterForBashAndRemovesItWhenTheWatchedProcessEnds(@TempDir Path dir) throws Exception {
        Requirements.netnsCluster();
        Process script = new ProcessBuilder("sleep", "600").start(); // stands for the harness script
        Path env = dir.resolve("cluster.env");
        Process main = new ProcessBuilder(JavaCommand.java(), "-cp", System.getProperty("java.class.path"),
                NetnsClusterMain.class.getName(), "2", env.toString(), Long.toString(script.pid()), "2")
                .redirectErrorStream(true).redirectOutput(dir.resolve("main.log").toFile()).start();
        try {
            long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (!Files.exists(env) && main.isAlive() && System.nanoTime() < until) Thread.sleep(100);
            assertThat(env).as("env file; log: %s", read(dir.resolve("main.log"))).exists();
            CommandResult r = CommandResult.run(T, "bash", "-c", "source " + env + " && echo ${#CLUSTER_NAMESPACES[@]} $CLUSTER_SUBNET"
                    + " && ip link show \"${CLUSTER_BRIDGE_PORTS[1]}\" | grep -q \"master $CLUSTER_BRIDGE\""
                    + " && ip netns exec \"${CLUSTER_NAMESPACES[1]}\" ip -4 -o addr show eth0 | grep -q \"${CLUSTER_ADDRESSES[1]}/24\""
                    + " && PATH=$CLUSTER_SSH_BIN:$PATH ssh \"${CLUSTER_ALIASES[1]}\" echo \\$JDIST_TEST_HOST"
                    + " && echo \"${CLUSTER_NAMESPACES[*]}\""
                    + " && ip netns exec \"${CLUSTER_NAMESPACES[1]}\" ip -4 -o addr show eth1 | grep -q \"${CLUSTER_ADDRESSES_1[1]}/24\""
                    + " && ip link show \"${CLUSTER_BRIDGE_PORTS_1[1]}\" | grep -q master"
                    + " && echo $CLUSTER_NETWORKS $CLUSTER_SUBNET_1 \"${CLUSTER_BRIDGE_PORTS_1[1]}\"");
            assertThat(r.exitCode()).as(r.toString()).isZero();
            List<String> lines = r.stdout().replace("\r", "").lines().toList();
            assertThat(lines.get(0)).matches("2 10\\.222\\.\\d+\\.0/24");
            assertThat(lines.get(1)).isEqualTo("host1");
            String[] namespaces = lines.get(2).split(" ");
            assertThat(lines.get(3)).matches("2 10\\.222\\.\\d+\\.0/24 \\S+");
            assertThat(lines.get(3).split(" ")[1]).isNotEqualTo(lines.get(0).split(" ")[1]);
            String secondPort = lines.get(3).split(" ")[2];

            script.destroy();
            assertThat(main.waitFor(60, TimeUnit.SECONDS)).as(read(dir.resolve("main.log"))).isTrue();
            String left = CommandResult.run(T, "ip", "netns", "list").stdout();
            for (String ns : namespaces) {
                assertThat(left).doesNotContain(ns);
            }
            assertThat(CommandResult.run(T, "ip", "link", "show", secondPort).exitCode()).as("the second network's veth").isNotZero();
        } finally {
            script.destroyForcibly();
            main.destroy(); // its shutdown hook removes the cluster
            main.waitFor(60, TimeUnit.SECONDS);
        }
    }

    private static String read(Path p) throws java.io.IOException {
        return Files.exists(p) ? Files.readString(p) : "";
    }
}
