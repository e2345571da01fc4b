package dev.jdist.ring;

import dev.jdist.cluster.RingHostfile;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Finds out whether every member of a ring formed from MLX variables without a job token is a jdist process
 * (docs/reference/collectives.md §3.13): UDP datagrams on the ring's own port numbers, which MLX's ring (TCP only)
 * never uses, sent only after this rank's ring connections are formed. Nothing is written on the ring's connections,
 * so an MLX peer sees none of it (at most its host answers "port unreachable").
 *
 * <p>Each rank binds UDP on its first hostfile address (IP and port) and sends every {@link #RESEND} to the first
 * address of every other rank a 30-byte datagram: {@code "JDMP"}, version 1, a flag (bit 0: the sender has heard from
 * every rank), the world size and the sender's rank (u32 little-endian each), and 16 bytes of a digest of the hostfile
 * (datagrams of another ring are dropped). A rank is sure that every member is jdist once it has heard from every rank
 * <em>and</em> every rank has told it that it heard from every rank; it then keeps sending until the group is set up
 * ({@link #close}), so that the others reach the same verdict. A rank that is not sure by {@link #WINDOW} after its
 * ring connected takes MLX peers to be possible.
 */
final class MemberProbe implements AutoCloseable {
    /** {@code off}: never probe; the ring then always runs as MLX's (docs/reference/collectives.md §3.1). */
    static final String VARIABLE = "JDIST_MEMBER_PROBE";
    /** How long a rank waits for the verdict after its ring connected: MLX peers never answer, so this is what they cost. */
    static final Duration WINDOW = Duration.ofMillis(1500);
    static final Duration RESEND = Duration.ofMillis(20);
    static final int BYTES = 30;
    private static final byte[] MAGIC = {'J', 'D', 'M', 'P'};
    private static final byte VERSION = 1;

    private final int rank;
    private final int size;
    private final DatagramChannel channel;
    private final Selector selector;
    private final InetSocketAddress[] peers;
    private final byte[] digest;
    private final boolean[] heard;       // a valid datagram came from this rank
    private final boolean[] complete;    // ... saying it heard from every rank
    private volatile boolean closed;
    private Thread linger;

    private MemberProbe(int rank, RingHostfile hostfile, DatagramChannel channel, Selector selector) {
        this.rank = rank;
        this.size = hostfile.size();
        this.channel = channel;
        this.selector = selector;
        this.peers = new InetSocketAddress[size];
        for (int q = 0; q < size; q++) peers[q] = hostfile.addresses(q).getFirst().socketAddress();
        this.digest = digest(hostfile);
        this.heard = new boolean[size];
        this.complete = new boolean[size];
        heard[rank] = true;
    }

    /** The verdict: {@code probe} (open until {@link #close}) when every member is jdist, else why MLX peers may be present. */
    record Verdict(MemberProbe probe, String whyNot) {}

    /** Probes the ring {@code hostfile} describes from {@code rank}, whose ring connections are formed; waits at most {@link #WINDOW}. */
    static Verdict run(int rank, RingHostfile hostfile) {
        InetSocketAddress own = hostfile.addresses(rank).getFirst().socketAddress();
        DatagramChannel ch;
        Selector sel;
        try {
            ch = DatagramChannel.open();
        } catch (IOException e) {
            return new Verdict(null, "rank " + rank + " cannot open a UDP socket to ask (" + e.getMessage() + ")");
        }
        try {
            ch.bind(own);
            ch.configureBlocking(false);
            sel = Selector.open();
            ch.register(sel, SelectionKey.OP_READ);
        } catch (IOException e) {
            closeQuietly(ch);
            return new Verdict(null, "rank " + rank + " cannot bind UDP " + own.getAddress().getHostAddress() + ":" + own.getPort()
                    + " to ask (" + e.getMessage() + ")");
        }
        MemberProbe p = new MemberProbe(rank, hostfile, ch, sel);
        String why;
        try {
            why = p.exchange(System.nanoTime() + WINDOW.toNanos());
        } catch (IOException e) {
            why = "rank " + rank + "'s UDP socket failed (" + e.getMessage() + ")";
        }
        if (why != null) {
            p.close();
            return new Verdict(null, why);
        }
        p.lingerUntilClosed();
        return new Verdict(p, null);
    }

    /** Sends and reads until sure (null) or {@code deadline} (why not sure). */
    private String exchange(long deadline) throws IOException {
        ByteBuffer in = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        long nextSend = System.nanoTime();
        while (true) {
            long now = System.nanoTime();
            if (now - nextSend >= 0) {
                sendAll();
                nextSend = now + RESEND.toNanos();
            }
            if (sure()) return null;
            if (now - deadline >= 0) return notSure();
            long waitNanos = Math.max(1_000_000, Math.min(nextSend, deadline) - now);
            selector.select(Math.max(1, waitNanos / 1_000_000));
            selector.selectedKeys().clear();
            drain(in);
        }
    }

    private void drain(ByteBuffer in) throws IOException {
        while (true) {
            in.clear();
            SocketAddress from = channel.receive(in);
            if (from == null) return;
            in.flip();
            accept(in);
        }
    }

    /** Records a datagram of this ring's probe; drops anything else. */
    private void accept(ByteBuffer b) {
        if (b.remaining() != BYTES) return;
        byte[] magic = new byte[4];
        b.get(magic);
        if (!Arrays.equals(magic, MAGIC) || b.get() != VERSION) return;
        byte flags = b.get();
        int n = b.getInt();
        int q = b.getInt();
        byte[] d = new byte[16];
        b.get(d);
        if (n != size || q < 0 || q >= size || q == rank || !Arrays.equals(d, digest)) return;
        synchronized (this) {
            heard[q] = true;
            if ((flags & 1) != 0) complete[q] = true;
        }
    }

    private synchronized boolean heardAll() {
        for (boolean h : heard) if (!h) return false;
        return true;
    }

    private synchronized boolean sure() {
        if (!heardAll()) return false;
        for (int q = 0; q < size; q++) if (q != rank && !complete[q]) return false;
        return true;
    }

    private synchronized String notSure() {
        List<Integer> silent = new ArrayList<>();
        List<Integer> unsure = new ArrayList<>();
        for (int q = 0; q < size; q++) {
            if (!heard[q]) silent.add(q);
            else if (q != rank && !complete[q]) unsure.add(q);
        }
        if (!silent.isEmpty()) {
            return ranks(silent) + " did not answer jdist's UDP probe within " + WINDOW.toMillis() + " ms (an MLX process, "
                    + "or UDP on the ring's ports is blocked between the hosts)";
        }
        return ranks(unsure) + " did not hear from every rank within " + WINDOW.toMillis() + " ms (an MLX process, or UDP on "
                + "the ring's ports is blocked between some hosts)";
    }

    private static String ranks(List<Integer> qs) {
        if (qs.size() == 1) return "rank " + qs.getFirst();
        String all = qs.toString();
        return "ranks " + all.substring(1, all.length() - 1);
    }

    private void sendAll() throws IOException {
        ByteBuffer out = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        out.put(MAGIC).put(VERSION).put((byte) (heardAll() ? 1 : 0)).putInt(size).putInt(rank).put(digest);
        for (int q = 0; q < size; q++) {
            if (q == rank) continue;
            out.rewind();
            try {
                channel.send(out, peers[q]);
            } catch (IOException e) {
                // a host that answers "unreachable" (no one bound there yet, or an MLX rank): try again next round
                if (!channel.isOpen()) throw e;
            }
        }
    }

    /** Sure: keep answering (the others may not be sure yet) until the group is set up. */
    private void lingerUntilClosed() {
        linger = Thread.ofPlatform().daemon().name("jdist-member-probe-" + rank).start(() -> {
            ByteBuffer in = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
            try {
                while (!closed) {
                    sendAll();
                    selector.select(RESEND.toMillis());
                    selector.selectedKeys().clear();
                    drain(in);
                }
            } catch (IOException | RuntimeException e) {
                // closed under it: the group is set up, or failed
            }
        });
    }

    /** Stops answering: every member is past the probe (the group's first exchange over the ring completed), or it failed. */
    @Override
    public void close() {
        closed = true;
        try {
            selector.close();
        } catch (IOException ignored) {
            // best effort
        }
        closeQuietly(channel);
        Thread t = linger;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void closeQuietly(DatagramChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // best effort
        }
    }

    /** 16 bytes of SHA-256 over the hostfile's address texts, rank by rank: datagrams of another ring are dropped. */
    static byte[] digest(RingHostfile hostfile) {
        StringBuilder sb = new StringBuilder("jdist member probe v1\n");
        for (List<RingHostfile.Address> entry : hostfile.ranks()) {
            for (RingHostfile.Address a : entry) sb.append(a.text()).append(' ');
            sb.append('\n');
        }
        try {
            return Arrays.copyOf(MessageDigest.getInstance("SHA-256").digest(sb.toString().getBytes(StandardCharsets.UTF_8)), 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available in this JVM", e);
        }
    }
}
