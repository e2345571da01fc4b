package dev.jdist.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.function.IntFunction;
import java.util.stream.IntStream;

/**
 * {@link NetnsCluster} for scripts (the simulated cluster of {@code bench/cluster/run.sh}): starts a cluster, describes
 * it in a bash file, and holds it until this JVM gets SIGTERM/SIGINT or the watched process ends; then the
 * cluster's own {@code close()} removes the namespaces, the bridge and every process in them.
 *
 * <pre>
 * java -cp ... dev.jdist.testing.NetnsClusterMain HOSTS ENV_FILE [WATCH_PID [NETWORKS]]
 * </pre>
 *
 * NETWORKS (default 1): every host gets interfaces {@code eth0 .. eth<NETWORKS-1>}, each on a bridge of its own
 * ({@link NetnsCluster#addNetwork()}), as hosts with several network ports.
 * The file is written only once every sshd listens (atomically, so a script that waits for it sees all of it).
 * It defines {@code CLUSTER_DIR CLUSTER_SSH_CONFIG CLUSTER_SSH_BIN CLUSTER_BRIDGE CLUSTER_BRIDGE_ADDRESS CLUSTER_SUBNET}
 * and the arrays {@code CLUSTER_ALIASES CLUSTER_ADDRESSES CLUSTER_NAMESPACES CLUSTER_BRIDGE_PORTS} (index = host), and
 * {@code CLUSTER_NETWORKS}; for each further network j, {@code CLUSTER_SUBNET_j} and the arrays
 * {@code CLUSTER_ADDRESSES_j CLUSTER_BRIDGE_PORTS_j}.
 */
public final class NetnsClusterMain {

    private NetnsClusterMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 4) {
            System.err.println("usage: NetnsClusterMain HOSTS ENV_FILE [WATCH_PID [NETWORKS]]");
            System.exit(2);
        }
        int networks = args.length == 4 ? Integer.parseInt(args[3]) : 1;
        if (networks < 1 || networks > 4) throw new IllegalArgumentException("NETWORKS must be 1..4, not " + networks);
        int hosts = Integer.parseInt(args[0]);
        Path envFile = Path.of(args[1]);
        ProcessHandle watched = args.length >= 3
                ? ProcessHandle.of(Long.parseLong(args[2])).orElseThrow(() -> new IllegalArgumentException("no process " + args[2]))
                : null;

        NetnsCluster cluster = NetnsCluster.start(hosts, "host"); // closes itself from a shutdown hook on SIGTERM/SIGINT
        for (int j = 1; j < networks; j++) cluster.addNetwork();
        Path tmp = envFile.resolveSibling(envFile.getFileName() + ".tmp");
        Files.writeString(tmp, describe(cluster), StandardCharsets.UTF_8);
        Files.move(tmp, envFile, StandardCopyOption.ATOMIC_MOVE);
        System.err.println("netns cluster ready: " + cluster);

        while (watched == null || watched.isAlive()) {
            Thread.sleep(1000);
        }
        System.err.println("netns cluster: process " + watched.pid() + " ended; removing the cluster");
        cluster.close();
    }

    private static String describe(NetnsCluster c) {
        String bridgeAddress = c.bridgeAddress();
        StringBuilder sb = new StringBuilder("# written by NetnsClusterMain\n");
        sb.append("CLUSTER_DIR=").append(quote(c.directory().toString())).append('\n');
        sb.append("CLUSTER_SSH_CONFIG=").append(quote(c.sshConfig().toString())).append('\n');
        sb.append("CLUSTER_SSH_BIN=").append(quote(c.sshBinDir().toString())).append('\n');
        sb.append("CLUSTER_BRIDGE=").append(quote(c.bridgeName())).append('\n');
        sb.append("CLUSTER_BRIDGE_ADDRESS=").append(quote(bridgeAddress)).append('\n');
        sb.append("CLUSTER_SUBNET=").append(quote(c.subnet(0))).append('\n');
        sb.append(array("CLUSTER_ALIASES", c.size(), c::hostName));
        sb.append(array("CLUSTER_ADDRESSES", c.size(), c::address));
        sb.append(array("CLUSTER_NAMESPACES", c.size(), c::namespace));
        sb.append(array("CLUSTER_BRIDGE_PORTS", c.size(), c::bridgePort));
        sb.append("CLUSTER_NETWORKS=").append(c.networks()).append('\n');
        for (int j = 1; j < c.networks(); j++) {
            int net = j;
            sb.append("CLUSTER_SUBNET_").append(net).append('=').append(quote(c.subnet(net))).append('\n');
            sb.append(array("CLUSTER_ADDRESSES_" + net, c.size(), i -> c.address(net, i)));
            sb.append(array("CLUSTER_BRIDGE_PORTS_" + net, c.size(), i -> c.bridgePort(net, i)));
        }
        return sb.toString();
    }

    private static String array(String name, int n, IntFunction<String> value) {
        List<String> items = IntStream.range(0, n).mapToObj(value).map(NetnsClusterMain::quote).toList();
        return name + "=(" + String.join(" ", items) + ")\n";
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
