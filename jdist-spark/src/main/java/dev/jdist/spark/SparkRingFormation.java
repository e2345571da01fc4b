package dev.jdist.spark;

import dev.jdist.ConfigException;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.spi.JobToken;
import org.apache.spark.BarrierTaskContext;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * How the tasks of one barrier stage attempt become a group: the only place that knows both Spark and jdist's
 * start-up. Two steps:
 * <ol>
 *   <li>exchange {@code rank address nonce} with the stage's {@code allGather}, check the answers, derive the
 *       attempt's job token from every task's nonce;</li>
 *   <li>form the group with {@link Distributed#connect}, its rendezvous run over the same {@code allGather}: the
 *       agreement check, the job table, and with them the liveness watch and the peer mesh (docs/spark.md).</li>
 * </ol>
 */
final class SparkRingFormation {

    /** The variables this class sets; a caller's settings must not. */
    static final List<String> OWNED = List.of("MLX_RANK", "MLX_HOSTFILE", JobToken.VARIABLE);

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final java.util.Base64.Encoder BASE64 = java.util.Base64.getEncoder();
    private static final java.util.Base64.Decoder BASE64_DECODER = java.util.Base64.getDecoder();
    /** The variable that names the interface a group listens on (the rendezvous's). */
    static final String IFNAME = "JDIST_IFNAME";

    /** One task's part of the exchange. */
    record Offer(int rank, String address, String nonce) {
        String encode() { return rank + " " + address + " " + nonce; }

        static Offer decode(String text, int index) {
            String[] f = text == null ? new String[0] : text.split(" ");
            if (f.length == 3 && f[0].matches("[0-9]{1,9}")) return new Offer(Integer.parseInt(f[0]), f[1], f[2]);
            throw new ConfigException("jdist-spark: the barrier allGather returned \"" + text + "\" from task " + index
                    + ", not a jdist ring offer; is every task of this barrier stage forming a jdist group at the same "
                    + "point (other allGather or barrier calls in between get mixed up with it)?");
        }
    }

    private SparkRingFormation() {}

    /**
     * Forms the ring of the stage attempt {@code ctx} belongs to. Every task of the stage must call this at the same
     * point of its program (it is a barrier). {@code env} holds the jdist settings (JDIST_TIMEOUT, ...).
     */
    static Group form(BarrierTaskContext ctx, Map<String, String> env) {
        int size = ctx.getTaskInfos().length;
        int rank = ctx.partitionId();
        if (rank >= size) {
            throw new ConfigException("jdist-spark: task of partition " + rank + " is in a barrier stage of " + size
                    + " tasks; a jdist group needs one task per partition (rank = partition id)");
        }
        String host = executorHost(ctx.getTaskInfos()[rank].address());
        InetAddress ip = ipv4(host);
        long hosts = java.util.Arrays.stream(ctx.getTaskInfos()).map(t -> executorHost(t.address())).distinct().count();
        if (ip.isLoopbackAddress() && hosts > 1) {
            throw new ConfigException("jdist-spark: this executor's host \"" + host + "\" resolves to the loopback address "
                    + ip.getHostAddress() + ", but the stage's tasks run on " + hosts + " hosts that could not reach it; "
                    + "set SPARK_LOCAL_IP on every worker to an address the other hosts can reach");
        }
        Offer mine = new Offer(rank, ip.getHostAddress(), newNonce());
        List<Offer> offers = check(ctx.allGather(mine.encode()), size, rank, mine);
        Map<String, String> groupEnv = new java.util.HashMap<>(env);
        groupEnv.put(JobToken.VARIABLE, jobToken(ctx.stageId(), ctx.stageAttemptNumber(), offers));
        // the group listens on the address Spark knows this executor by (unless the caller named an interface)
        groupEnv.putIfAbsent(IFNAME, interfaceOf(ip));
        return Distributed.connect(rank, size, (r, n) -> (src, bytesPerRank) -> allGather(ctx, src, bytesPerRank), "ring", groupEnv);
    }

    /** The rendezvous's all-gather over the stage's: every task's bytes (as text), in partition order. */
    static byte[] allGather(BarrierTaskContext ctx, byte[] src, int bytesPerRank) {
        String[] all = ctx.allGather(BASE64.encodeToString(src));
        byte[] out = new byte[all.length * bytesPerRank];
        for (int q = 0; q < all.length; q++) {
            byte[] b = BASE64_DECODER.decode(all[q]);
            if (b.length != bytesPerRank) {
                throw new ConfigException("jdist-spark: the barrier allGather returned " + b.length + " bytes from task " + q + " where "
                        + bytesPerRank + " were expected; is every task of this barrier stage forming a jdist group at the same "
                        + "point (other allGather or barrier calls in between get mixed up with it)?");
            }
            System.arraycopy(b, 0, out, q * bytesPerRank, bytesPerRank);
        }
        return out;
    }

    /** The name of the network interface that holds {@code ip}: the group's {@code JDIST_IFNAME}. */
    static String interfaceOf(InetAddress ip) {
        try {
            NetworkInterface nif = NetworkInterface.getByInetAddress(ip);
            if (nif != null) return nif.getName();
        } catch (SocketException e) {
            // named below
        }
        throw new ConfigException("jdist-spark: this executor's address as Spark knows it, " + ip.getHostAddress() + ", is on no "
                + "network interface of this host; set SPARK_LOCAL_IP on the workers to an address of each host, or "
                + IFNAME + " in the settings");
    }

    /** {@code host:port} of Spark's task info, or a bare host: the host part. */
    static String executorHost(String address) {
        String host = address;
        int colon = address.lastIndexOf(':');
        if (colon >= 0 && address.indexOf(':') == colon) host = address.substring(0, colon);   // not for IPv6 literals
        if (host.isEmpty()) {
            throw new ConfigException("jdist-spark: Spark gave this task the executor address \"" + address
                    + "\", which names no host; set SPARK_LOCAL_IP (or the executor's host name) on the workers");
        }
        return host;
    }

    static List<Offer> check(String[] gathered, int size, int rank, Offer mine) {
        if (gathered.length != size) {
            throw new ConfigException("jdist-spark: the barrier allGather returned " + gathered.length + " offers for a "
                    + size + "-task stage");
        }
        List<Offer> offers = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            Offer o = Offer.decode(gathered[i], i);
            if (o.rank() != i) {
                throw new ConfigException("jdist-spark: the allGather answer at position " + i + " comes from rank " + o.rank()
                        + "; Spark orders answers by partition id, so every task must form its group in the same call");
            }
            offers.add(o);
        }
        if (!offers.get(rank).equals(mine)) {
            throw new ConfigException("jdist-spark: rank " + rank + " does not find its own offer (" + mine.encode()
                    + ") in the allGather answers; another allGather of the same stage got mixed up with this one");
        }
        return offers;
    }

    /**
     * The attempt's token: a digest of the stage, its attempt and every task's random nonce. A task of an older
     * attempt holds other nonces, so it fails the agreement check and its connections the ring's handshake instead of
     * joining the new group.
     */
    static String jobToken(int stageId, int stageAttempt, List<Offer> offers) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            d.update(("jdist-spark stage " + stageId + " attempt " + stageAttempt).getBytes(StandardCharsets.UTF_8));
            for (Offer o : offers) d.update(("\n" + o.encode()).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available in this JVM", e);
        }
    }

    private static InetAddress ipv4(String host) {
        try {
            for (InetAddress a : InetAddress.getAllByName(host)) {
                if (a instanceof Inet4Address) return a;
            }
        } catch (UnknownHostException e) {
            throw new ConfigException("jdist-spark: this executor's host \"" + host + "\" does not resolve; "
                    + "set SPARK_LOCAL_IP on the workers to an IPv4 address of each host", e);
        }
        throw new ConfigException("jdist-spark: this executor's host \"" + host + "\" has no IPv4 address and the "
                + "ring is IPv4 only; set SPARK_LOCAL_IP on the workers to an IPv4 address of each host");
    }

    private static String newNonce() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

}
