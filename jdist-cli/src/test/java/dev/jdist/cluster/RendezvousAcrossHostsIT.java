package dev.jdist.cluster;

import dev.jdist.launch.ShellQuote;
import dev.jdist.testing.ClusterCheck;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.NetnsCluster;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The rendezvous across real interfaces: three "hosts" (network namespaces with sshd, {@link NetnsCluster}), the ranks
 * started with the environment a scheduler gives them — torchrun-style over ssh, Slurm-style with
 * {@code ip netns exec} — and the unchanged check program (values checked on every rank). Every host also has a second
 * network ({@code eth1}, a separate bridge): the address each rank publishes is the one of the interface that routes to
 * the rendezvous host, or {@code JDIST_IFNAME}'s. Host names ({@code node0}..) resolve inside the namespaces.
 */
@Timeout(420)
class RendezvousAcrossHostsIT {

    private static final Duration T = Duration.ofSeconds(150);
    private static NetnsCluster cluster;
    private static int second;

    @BeforeAll
    static void startCluster() {
        Requirements.netnsCluster();
        cluster = NetnsCluster.start(3);
        second = cluster.addNetwork();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    /** The ranks' outputs, concatenated; every rank started at once, each bounded by {@link #T}. */
    private static String runRanks(int n, IntFunction<CommandResult> rank) {
        List<CompletableFuture<CommandResult>> futures = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int q = r;
            futures.add(CompletableFuture.supplyAsync(() -> rank.apply(q), task -> Thread.ofVirtual().start(task)));
        }
        StringBuilder all = new StringBuilder();
        List<Integer> codes = new ArrayList<>();
        for (var f : futures) {
            CommandResult c = f.join();
            codes.add(c.exitCode());
            all.append(c.stdout()).append(c.stderr());
        }
        assertThat(codes).as("exit codes; output:%n%s%nprocesses left: %s", all, cluster.processesInAll())
                .allMatch(c -> c == 0);
        return all.toString();
    }

    /** Starts the check program in host h's namespace with exactly {@code vars} (and PATH, HOME) as its environment. */
    private static CommandResult inNamespace(int h, Map<String, String> vars) {
        List<String> argv = new ArrayList<>(List.of("env", "-i", "PATH=/usr/bin:/bin", "HOME=/tmp", "JDIST_TIMEOUT=60"));
        vars.forEach((k, v) -> argv.add(k + "=" + v));
        argv.addAll(ClusterCheck.command());
        return cluster.exec(h, T, argv.toArray(String[]::new));
    }

    private static Map<String, String> vars(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    private static List<String> addresses(int net, int... hostOfRank) {
        List<String> out = new ArrayList<>();
        for (int h : hostOfRank) out.add(cluster.address(net, h));
        return out;
    }

    @Test
    void torchrunStyleVariablesOverSshFourRanksOnThreeHosts() throws Exception {
        int port = FreePorts.block(1);
        int[] hostOf = {0, 0, 1, 2};
        String out = runRanks(4, r -> cluster.ssh(hostOf[r], T, "RANK=" + r + " WORLD_SIZE=4 LOCAL_RANK=" + (r == 1 ? 1 : 0)
                + " MASTER_ADDR=" + cluster.hostName(0) + " MASTER_PORT=" + port + " JDIST_TIMEOUT=60 exec "
                + ShellQuote.join(ClusterCheck.command())));
        ClusterCheck.assertEveryRankOk(out, 4, "ring", "torchrun");
        // MASTER_ADDR names node0, which resolves to its eth0 address: every rank publishes its eth0 address
        for (int r = 0; r < 4; r++) ClusterCheck.assertTable(out, r, addresses(0, hostOf));
    }

    @Test
    void slurmStyleVariablesTwoTasksPerHost() {
        String job = Integer.toString(ThreadLocalRandom.current().nextInt(1000, 900_000));
        String out = runRanks(6, r -> inNamespace(r / 2, vars("SLURM_JOB_ID", job, "SLURM_STEP_ID", "0",
                "SLURM_PROCID", "" + r, "SLURM_NTASKS", "6", "SLURM_STEP_NUM_TASKS", "6", "SLURM_LOCALID", "" + r % 2,
                "SLURM_NODEID", "" + r / 2, "SLURM_STEP_NODELIST", "node[0-2]", "SLURM_JOB_NODELIST", "node[0-2]")));
        ClusterCheck.assertEveryRankOk(out, 6, "ring", "slurm");
        // rank 0 serves the store on node0 (the first node of node[0-2]); ranks 0 and 1 share a host
        for (int r = 0; r < 6; r++) ClusterCheck.assertTable(out, r, addresses(0, 0, 0, 1, 1, 2, 2));
    }

    @Test
    void withTwoNetworksTheRanksPublishTheOneThatRoutesToTheRendezvousHost() throws Exception {
        int port = FreePorts.block(1);
        // the rendezvous host given by its eth1 address: eth1 routes there, so every rank publishes its eth1 address
        String out = runRanks(3, r -> inNamespace(r, vars("RANK", "" + r, "WORLD_SIZE", "3",
                "MASTER_ADDR", cluster.address(second, 0), "MASTER_PORT", "" + port)));
        ClusterCheck.assertEveryRankOk(out, 3, "ring", "torchrun");
        for (int r = 0; r < 3; r++) ClusterCheck.assertTable(out, r, addresses(second, 0, 1, 2));
    }

    @Test
    void jdistIfnameChoosesTheInterfaceTheRingUses() throws Exception {
        int port = FreePorts.block(1);
        // the store is reached over eth0 (node0's name), but the ring is told to use eth1
        String out = runRanks(3, r -> inNamespace(r, vars("JDIST_RANK", "" + r, "JDIST_WORLD_SIZE", "3",
                "JDIST_MASTER_ADDR", cluster.hostName(0), "JDIST_MASTER_PORT", "" + port, "JDIST_IFNAME", "eth" + second)));
        ClusterCheck.assertEveryRankOk(out, 3, "ring", "jdist");
        for (int r = 0; r < 3; r++) ClusterCheck.assertTable(out, r, addresses(second, 0, 1, 2));
    }
}
