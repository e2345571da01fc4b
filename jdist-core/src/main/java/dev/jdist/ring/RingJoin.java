package dev.jdist.ring;

import dev.jdist.ConfigException;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.spi.JobRendezvous;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.JobToken;
import dev.jdist.spi.RankOffer;
import dev.jdist.spi.RankRecord;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The ring formed from a rendezvous instead of a hostfile (docs/clusters.md): this rank binds its listeners (port 0,
 * so the system picks free ports, before anything is published), offers their ports with the settings every rank
 * must share, and builds the hostfile in memory from the agreed table; {@link RingGroup#connect(RingSettings, List)}
 * then forms the ring exactly as from a file.
 */
final class RingJoin {
    /** Connections per neighbour (the hostfile's addresses per entry); default 1. */
    static final String CONNECTIONS = "JDIST_RING_CONNECTIONS";
    static final int MAX_CONNECTIONS = 8;

    private RingJoin() {}

    static RingGroup join(JobRendezvous rv) {
        Map<String, String> env = rv.env();
        int k = parseConnections(env.get(CONNECTIONS));
        RingSettings.Transport transport = RingSettings.parseTransport(env.get(RingSettings.TRANSPORT));
        Duration timeout = RingSettings.parseTimeout(env.get(RingSettings.TIMEOUT));
        long shmLinkBytes = RingSettings.parseShmBufferKib(env.get(RingSettings.SHM_BUFFER)) * 1024;
        long spin = RingSettings.parseSpin(env.get(RingSettings.SPIN));
        String token = JobToken.in(env);
        int r = rv.rank();
        InetAddress bind = rv.bindAddress();
        List<ServerSocketChannel> listeners = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            if (rv.size() > 1) {
                for (int j = 0; j < k; j++) {
                    ServerSocketChannel ch = RingConnector.listen(new InetSocketAddress(bind, 0), bind.getHostAddress() + ":0",
                            "rank " + r + " (ring listener " + j + ")");
                    listeners.add(ch);
                    ports.add(((InetSocketAddress) ch.getLocalAddress()).getPort());
                }
            }
            List<String> capabilities = new ArrayList<>(List.of("ring/tcp", "ring/split", "ring/sum_scatter"));
            if (java.nio.file.Files.isReadable(Path.of("/proc/sys/kernel/random/boot_id"))) capabilities.add("ring/shm");
            if (token != null) capabilities.add("ring/auth");
            JobTable table = rv.agree(new RankOffer("ring", Map.of(RingSettings.TRANSPORT, transport.envValue(), CONNECTIONS,
                    Integer.toString(k)), ports, capabilities));
            RingHostfile hostfile = hostfile(table, k);
            RingSettings settings = new RingSettings(r, hostfile, env.containsKey(RingSettings.VERBOSE), timeout, token, spin,
                    transport, shmLinkBytes);
            List<ServerSocketChannel> handed = rv.size() > 1 ? listeners : null;
            listeners = List.of();
            return RingGroup.connect(settings, handed);
        } catch (IOException e) {
            throw new ConfigException("rank " + r + " cannot read its ring listener's port: " + e, e);
        } finally {
            for (ServerSocketChannel ch : listeners) RingConnector.closeQuietly(ch);
        }
    }

    /** The hostfile the table describes: rank q listens on its published host at its published ports. */
    static RingHostfile hostfile(JobTable table, int k) {
        List<List<RingHostfile.Address>> ranks = new ArrayList<>();
        for (RankRecord rec : table.ranks()) {
            if (table.size() > 1 && rec.ports().size() != k) {
                throw new ConfigException("rank " + rec.rank() + " " + rec.where() + " published " + rec.ports().size()
                        + " ring ports, expected " + k + " (" + CONNECTIONS + ")");
            }
            InetAddress ip;
            try {
                ip = InetAddress.getByName(rec.host());
            } catch (UnknownHostException e) {
                throw new ConfigException("rank " + rec.rank() + " published the address \"" + rec.host() + "\", which is not an "
                        + "IPv4 address", e);
            }
            List<RingHostfile.Address> addrs = new ArrayList<>();
            List<Integer> ports = table.size() > 1 ? rec.ports() : List.of(0);
            for (int p : ports) {
                addrs.add(new RingHostfile.Address(rec.host() + ":" + p, rec.host(), p, new InetSocketAddress(ip, p)));
            }
            ranks.add(List.copyOf(addrs));
        }
        return new RingHostfile(null, List.copyOf(ranks));   // messages call it "the in-memory hostfile"
    }

    static int parseConnections(String text) {
        if (text == null || text.isBlank()) return 1;
        try {
            int v = Integer.parseInt(text.strip());
            if (v >= 1 && v <= MAX_CONNECTIONS) return v;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new ConfigException(CONNECTIONS + "=\"" + text + "\" is not a number of connections per ring neighbour; use 1.."
                + MAX_CONNECTIONS + " (unset: 1)");
    }
}
