package dev.jdist.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.ConfigException;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.spi.JobToken;
import org.apache.spark.BarrierTaskContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * How the tasks of one barrier stage attempt become a ring: the only place that knows both Spark and the
 * ring's start-up. Three steps, each replaceable when a core bootstrap that takes an all-gather function lands:
 * <ol>
 *   <li>reserve a port on this executor's address (bound, not listening, so nothing else takes it);</li>
 *   <li>exchange {@code rank address nonce} with the stage's {@code allGather}, check the answers, derive the
 *       attempt's job token from every task's nonce;</li>
 *   <li>write the ring hostfile and form the group with {@link Distributed#newGroup}.</li>
 * </ol>
 * The reservation is a TCP socket bound with SO_REUSEADDR but never listening: on Linux the ring's own listener
 * (also SO_REUSEADDR) can bind the same address, while the kernel hands that port to no other socket that asks
 * for a free one. It is closed once the ring is formed.
 */
final class SparkRingFormation {

    /** The variables this class sets; a caller's settings must not. */
    static final List<String> OWNED = List.of("MLX_RANK", "MLX_HOSTFILE", JobToken.VARIABLE);

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final ObjectMapper JSON = new ObjectMapper();

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
        try (PortReservation reserved = PortReservation.on(ip)) {
            Offer mine = new Offer(rank, ip.getHostAddress() + ":" + reserved.port(), newNonce());
            String[] gathered = ctx.allGather(mine.encode());
            List<Offer> offers = check(gathered, size, rank, mine);
            String token = jobToken(ctx.stageId(), ctx.stageAttemptNumber(), offers);
            Path hostfile = writeHostfile(offers);
            try {
                Map<String, String> ringEnv = new java.util.HashMap<>(env);
                ringEnv.put("MLX_RANK", Integer.toString(rank));
                ringEnv.put("MLX_HOSTFILE", hostfile.toString());
                ringEnv.put(JobToken.VARIABLE, token);
                return Distributed.newGroup("ring", ringEnv);
            } finally {
                deleteQuietly(hostfile);
            }
        }
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
     * attempt holds other nonces, so its connections fail the ring's handshake instead of joining the new ring.
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

    private static Path writeHostfile(List<Offer> offers) {
        List<List<String>> ranks = offers.stream().map(o -> List.of(o.address())).toList();
        try {
            Path file = Files.createTempFile("jdist-spark-ring-", ".json");
            Files.writeString(file, JSON.writeValueAsString(ranks));
            return file;
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        } catch (IOException e) {
            throw new UncheckedIOException("jdist-spark: cannot write the ring hostfile to " + System.getProperty("java.io.tmpdir")
                    + " (java.io.tmpdir): " + e.getMessage(), e);
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a temp file left behind is harmless
        }
    }

    /** A port held for the ring: bound, never listening, closed after the ring's listener took it over. */
    record PortReservation(SocketChannel socket, int port) implements AutoCloseable {
        static PortReservation on(InetAddress ip) {
            SocketChannel s = null;
            try {
                s = SocketChannel.open(StandardProtocolFamily.INET);
                s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
                s.bind(new InetSocketAddress(ip, 0));
                return new PortReservation(s, ((InetSocketAddress) s.getLocalAddress()).getPort());
            } catch (IOException e) {
                if (s != null) {
                    try {
                        s.close();
                    } catch (IOException ignored) {
                        // nothing more to do
                    }
                }
                throw new ConfigException("jdist-spark: cannot bind a port on " + ip.getHostAddress()
                        + ", this executor's address as Spark knows it: " + e.getMessage()
                        + "; set SPARK_LOCAL_IP on the workers to an address of this host", e);
            }
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a never-connected socket does not fail in practice
            }
        }
    }
}
