package dev.jdist.rendezvous;

import dev.jdist.AllGatherFactory;
import dev.jdist.ConfigException;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.spi.JdistTimeout;
import dev.jdist.spi.JdistVersion;
import dev.jdist.spi.RankOffer;
import dev.jdist.spi.RankRecord;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Entry points of the rendezvous (docs/clusters.md): {@link #open} for a job found in the environment (rank 0 serves
 * the store, every rank connects to it), {@link #over} for an embedder's all-gather (no store). Both give a
 * {@link dev.jdist.spi.JobRendezvous} that a backend forms its group from.
 */
public final class Rendezvous {

    /** The rendezvous deadline; unset: {@code JDIST_TIMEOUT}'s value (default 120 s). Same syntax. */
    public static final String TIMEOUT = "JDIST_RENDEZVOUS_TIMEOUT";
    /** The network interface whose IPv4 address this rank publishes and listens on (default: the one that routes to rank 0). */
    public static final String IFNAME = "JDIST_IFNAME";

    private Rendezvous() {}

    /** Meets the other ranks of {@code job} through the store at its master address (rank 0 serves it). */
    public static StoreRendezvous open(ClusterJob job, Map<String, String> env) {
        return StoreRendezvous.open(job, env);
    }

    /**
     * Meets the other ranks through {@code exchange}, an all-gather the caller provides (Spark's
     * {@code BarrierTaskContext.allGather}, an MPI job's own): no store, no master address.
     */
    public static ExchangeRendezvous over(int rank, int size, AllGatherFactory exchange, Map<String, String> env) {
        return ExchangeRendezvous.create(rank, size, exchange, env);
    }

    /** {@code JDIST_RENDEZVOUS_TIMEOUT}, else {@code JDIST_TIMEOUT}, else 120 s. */
    public static Duration timeout(Map<String, String> env) {
        Duration base = JdistTimeout.parse(env.get(JdistTimeout.VARIABLE));
        return JdistTimeout.parse(TIMEOUT, env.get(TIMEOUT), base);
    }

    /** This rank's record: the common facts plus the backend's offer. */
    static RankRecord record(int rank, String rankSource, int size, String sizeSource, String source, RankOffer offer,
                             String token, String jobDigest, String jobDescription, String host) {
        return new RankRecord(rank, rankSource, size, sizeSource, source, offer.backend(), JdistVersion.release(),
                JdistVersion.WIRE_PROTOCOL, LocalFacts.tokenDigest(token), jobDigest, jobDescription, offer.settings(), host,
                LocalFacts.HOSTNAME, LocalFacts.PID, LocalFacts.BOOT_ID, offer.ports(), offer.capabilities());
    }

    /** The IPv4 address of {@code JDIST_IFNAME}, or null when it is unset. */
    static InetAddress interfaceAddress(Map<String, String> env) {
        String name = env.get(IFNAME);
        if (name == null || name.isBlank()) return null;
        name = name.strip();
        NetworkInterface nif;
        try {
            nif = NetworkInterface.getByName(name);
        } catch (SocketException e) {
            nif = null;
        }
        if (nif == null) {
            throw new ConfigException(IFNAME + "=" + name + " names no network interface of this host; interfaces here: "
                    + describeInterfaces());
        }
        for (InterfaceAddress a : nif.getInterfaceAddresses()) {
            if (a.getAddress() instanceof Inet4Address v4) return v4;
        }
        throw new ConfigException(IFNAME + "=" + name + " has no IPv4 address (the ring is IPv4 only); interfaces here: "
                + describeInterfaces());
    }

    /** The first IPv4 address of an up, non-loopback interface (by interface index), else loopback. */
    static InetAddress firstNetworkAddress() {
        List<NetworkInterface> nifs = new ArrayList<>();
        try {
            nifs.addAll(Collections.list(NetworkInterface.getNetworkInterfaces()));
        } catch (SocketException | NullPointerException e) {
            return InetAddress.getLoopbackAddress();
        }
        nifs.sort(Comparator.comparingInt(NetworkInterface::getIndex));
        for (NetworkInterface n : nifs) {
            try {
                if (!n.isUp() || n.isLoopback()) continue;
            } catch (SocketException e) {
                continue;
            }
            for (InterfaceAddress a : n.getInterfaceAddresses()) {
                if (a.getAddress() instanceof Inet4Address v4 && !v4.isLinkLocalAddress()) return v4;
            }
        }
        return InetAddress.getLoopbackAddress();
    }

    static String describeInterfaces() {
        List<String> out = new ArrayList<>();
        try {
            for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                List<String> v4 = new ArrayList<>();
                for (InterfaceAddress a : n.getInterfaceAddresses()) {
                    if (a.getAddress() instanceof Inet4Address) v4.add(a.getAddress().getHostAddress());
                }
                out.add(n.getName() + (v4.isEmpty() ? " (no IPv4)" : " " + String.join(", ", v4)));
            }
        } catch (SocketException | NullPointerException e) {
            return "(cannot list them: " + e + ")";
        }
        return String.join("; ", out);
    }

    static String seconds(Duration d) {
        double s = d.toNanos() / 1e9;
        if (s == Math.rint(s)) return String.valueOf((long) s);
        return String.format(java.util.Locale.ROOT, "%.1f", s);
    }
}
