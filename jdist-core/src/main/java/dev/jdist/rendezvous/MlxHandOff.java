package dev.jdist.rendezvous;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.ConfigException;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.cluster.JobDiscovery;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.RankOffer;
import dev.jdist.spi.RankRecord;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * For a process that hands the job on to another program (an MLX child, a jdist child started by a wrapper): it
 * meets the other ranks through the rendezvous exactly as {@code Distributed.init()} would, reserves free ports for the
 * child's ring listeners, and writes an MLX ring hostfile; the child is then started with {@code MLX_RANK} and
 * {@code MLX_HOSTFILE} and forms the ring as from any hostfile.
 *
 * <p>The ports are released just before this returns, so the child must bind them soon (another process could take
 * one in between: the child then reports the port in use). {@code Distributed.init()} itself has no such window: it
 * hands the bound listeners to the ring.
 */
public final class MlxHandOff {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * @param rank        this process's rank
     * @param size        the number of ranks
     * @param hostfile    the MLX ring hostfile written for the child (the same contents on every rank)
     * @param environment what to add to the child's environment: {@code MLX_RANK} and {@code MLX_HOSTFILE}
     * @param table       every rank's record
     */
    public record Result(int rank, int size, Path hostfile, Map<String, String> environment, JobTable table) {}

    private MlxHandOff() {}

    /**
     * Holds a free port without listening on it (a bound socket that is not a listener: a peer that connects early is
     * refused and retries, instead of being accepted by this process and then cut off). The port is below the
     * system's ephemeral range when one is free there (outgoing connections take their local ports from that range, so
     * a port released inside it can be taken by any connection before the child binds it), else any free port.
     */
    static SocketChannel reserve(InetAddress address) throws IOException {
        int ephemeralLow = 32768;
        try {
            String[] range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim().split("\\s+");
            ephemeralLow = Integer.parseInt(range[0]);
        } catch (IOException | RuntimeException ignored) {
            // not Linux: assume the common default
        }
        int low = Math.max(1024, ephemeralLow - 12_000);
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200 && low < ephemeralLow; attempt++) {
            SocketChannel s = SocketChannel.open(StandardProtocolFamily.INET);
            try {
                s.bind(new InetSocketAddress(address, random.nextInt(low, ephemeralLow)));
                return s;
            } catch (IOException e) {
                s.close();
            }
        }
        SocketChannel s = SocketChannel.open(StandardProtocolFamily.INET);
        s.bind(new InetSocketAddress(address, 0));
        return s;
    }

    /**
     * Finds the job in {@code env} (as {@code Distributed.init()} does), meets the others, writes the hostfile into
     * {@code dir} and returns the child's variables. {@code connections}: addresses per rank (MLX's
     * {@code --connections-per-ip}).
     */
    public static Result prepare(Map<String, String> env, Path dir, int connections) {
        if (connections < 1 || connections > 8) throw new IllegalArgumentException("connections must be 1..8, got " + connections);
        JobDiscovery.Finding f = JobDiscovery.detect(env);
        ClusterJob job = f.job().orElseThrow(() -> new ConfigException("there is no job to hand on: " + String.join("; ", f.explain())
                + " (a hand-off needs a job found through the rendezvous: torchrun, Trainer v2, MPI-launcher, Slurm, "
                + "Kubernetes or JDIST_RANK variables)"));
        List<SocketChannel> reserved = new ArrayList<>();
        try (StoreRendezvous rv = StoreRendezvous.open(job, env)) {
            List<Integer> ports = new ArrayList<>();
            for (int j = 0; j < connections; j++) {
                SocketChannel s = reserve(rv.bindAddress());
                reserved.add(s);
                ports.add(((InetSocketAddress) s.getLocalAddress()).getPort());
            }
            JobTable table = rv.agree(new RankOffer("ring", Map.of("hand-off connections", Integer.toString(connections)), ports,
                    List.of("hand-off")));
            List<List<String>> entries = new ArrayList<>();
            for (RankRecord r : table.ranks()) entries.add(r.ports().stream().map(p -> r.host() + ":" + p).toList());
            Files.createDirectories(dir);
            Path file = dir.resolve("jdist-hostfile-rank" + job.rank() + ".json");
            Files.writeString(file, JSON.writeValueAsString(entries) + "\n");
            Map<String, String> childEnv = new LinkedHashMap<>();
            childEnv.put("MLX_RANK", Integer.toString(job.rank()));
            childEnv.put("MLX_HOSTFILE", file.toString());
            return new Result(job.rank(), job.size(), file, Map.copyOf(childEnv), table);
        } catch (IOException e) {
            throw new ConfigException("rank " + job.rank() + " cannot prepare the hand-off (ports or hostfile in " + dir + "): " + e, e);
        } finally {
            for (SocketChannel s : reserved) StoreServer.closeQuietly(s);
        }
    }
}
