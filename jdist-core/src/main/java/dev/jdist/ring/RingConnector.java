package dev.jdist.ring;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.connect.Dialer;
import dev.jdist.connect.Handshake;
import dev.jdist.connect.Sockets;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Connection set-up of a ring (docs/reference/collectives.md §3.2): {@code right[j]} is the connection this
 * rank initiates to its right neighbour's address j, {@code left[j]} the one it accepts on its own
 * address j. jdist binds and listens on all its own addresses first, then connects and accepts at
 * the same time (one selector, no threads), retrying refused connections with a short backoff
 * until the deadline; nothing is written during set-up unless authentication is on
 * ({@link RingAuthenticator}). TCP_NODELAY on every connection. The attempts and the handshake's byte exchange are
 * {@link dev.jdist.connect}'s, shared with the peer mesh; the ring's handshake bytes are {@link RingHandshake}'s.
 */
final class RingConnector {

    /** A bound, listening own address. */
    private record Listener(int index, String text, ServerSocketChannel channel) {}

    /** An address of the right neighbour to connect to. */
    private record Target(int index, String text, InetSocketAddress address) {}

    /** The result: the accepted {@code left} and initiated {@code right} connections, non-blocking, index j at j. */
    record Connections(List<RingConnection> left, List<RingConnection> right) {
        /** Connections per neighbour (k). */
        int perNeighbour() { return left.size(); }

        /** Closes every connection (quietly: closing is best effort). */
        void closeAll() {
            for (RingConnection c : left) closeQuietly(c.channel());
            for (RingConnection c : right) closeQuietly(c.channel());
        }
    }

    private static final int MAX_PENDING_HANDSHAKES = 16;

    private final RingSettings settings;
    private final int rank;
    private final int leftRank;
    private final int rightRank;
    private final RingLog log;
    private final RingAuthenticator auth;

    /** A connector for this rank of the ring that {@code settings} describe (at least 2 ranks). */
    RingConnector(RingSettings settings, RingLog log) {
        this.settings = settings;
        this.rank = settings.rank();
        this.leftRank = settings.leftRank();
        this.rightRank = settings.rightRank();
        this.log = log;
        this.auth = settings.jobToken() == null ? null : new RingAuthenticator(settings.jobToken());
    }

    /**
     * Binds and listens on every address of this rank's hostfile entry, in order; closes what it opened when one
     * fails.
     */
    static List<ServerSocketChannel> listenOnOwnAddresses(RingSettings settings) {
        RingHostfile hf = settings.hostfile();
        List<RingHostfile.Address> own = hf.addresses(settings.rank());
        List<ServerSocketChannel> bound = new ArrayList<>();
        try {
            for (int j = 0; j < own.size(); j++) {
                RingHostfile.Address a = own.get(j);
                bound.add(listen(a.socketAddress(), a.text(),
                        "rank " + settings.rank() + " (address " + j + " of its entry in " + hf.source() + ")"));
            }
        } catch (RuntimeException e) {
            for (ServerSocketChannel ch : bound) closeQuietly(ch);
            throw e;
        }
        return bound;
    }

    /**
     * Binds and listens on {@code address} (IPv4, SO_REUSEADDR but not SO_REUSEPORT, so a second
     * process on the same address — e.g. a duplicate rank — is detected).
     */
    static ServerSocketChannel listen(InetSocketAddress address, String text, String owner) {
        try {
            return Sockets.listen(address, 16);
        } catch (IOException e) {
            String msg = String.valueOf(e.getMessage());
            String fix;
            if (msg.contains("in use")) {
                fix = "another process already listens there: a second rank started with the same MLX_RANK, a previous "
                        + "job still running, or another program; stop it or choose other ports in the hostfile";
            } else if (msg.contains("assign") || e instanceof BindException) {
                fix = "it is not an address of this host; check that MLX_RANK matches this machine's entry in the hostfile "
                        + "and that the IP is configured here";
            } else {
                fix = "check the address in the hostfile";
            }
            throw new ConfigException(owner + " cannot listen on " + text + ": " + msg + "; " + fix, e);
        }
    }

    /**
     * Forms the connections: accepts {@code left[j]} on {@code bound.get(j)} (listening on this rank's address j)
     * while connecting {@code right[j]} to the right neighbour's address j, until the settings' timeout; closes the
     * listeners either way.
     */
    Connections connect(List<ServerSocketChannel> bound) {
        List<RingHostfile.Address> own = settings.hostfile().addresses(rank);
        List<RingHostfile.Address> theirs = settings.hostfile().addresses(rightRank);
        List<Listener> listeners = new ArrayList<>();
        for (int j = 0; j < bound.size(); j++) listeners.add(new Listener(j, own.get(j).text(), bound.get(j)));
        List<Target> targets = new ArrayList<>();
        for (int j = 0; j < theirs.size(); j++) targets.add(new Target(j, theirs.get(j).text(), theirs.get(j).socketAddress()));
        Duration timeout = settings.timeout();
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        Selector selector = null;
        List<ListenSlot> listenSlots = new ArrayList<>();
        List<ConnectSlot> connectSlots = new ArrayList<>();
        boolean ok = false;
        try {
            selector = Selector.open();
            for (Listener l : listeners) {
                ListenSlot s = new ListenSlot(l);
                listenSlots.add(s);
                l.channel().register(selector, SelectionKey.OP_ACCEPT, s);
                log.log("listening on " + l.text() + " for left neighbour rank " + leftRank + " (connection " + l.index() + ")");
            }
            for (Target t : targets) connectSlots.add(new ConnectSlot(t, selector));

            while (true) {
                long now = System.nanoTime();
                boolean done = true;
                for (ListenSlot s : listenSlots) done &= s.result != null;
                for (ConnectSlot s : connectSlots) done &= s.result != null;
                if (done) break;
                if (now - deadline >= 0) throw deadlineError(listenSlots, connectSlots, timeout);
                long wake = deadline;
                for (ConnectSlot s : connectSlots) {
                    if (s.result == null) wake = s.dialer.dialIfDue(now, wake);
                }
                selector.select(Dialer.millisUntil(wake));
                for (SelectionKey key : selector.selectedKeys()) {
                    Object a = key.attachment();
                    if (!key.isValid()) continue;
                    if (a instanceof ListenSlot s) {
                        s.acceptAll(selector);
                    } else if (a instanceof Dialer d) {
                        d.finishConnect();
                    } else if (a instanceof Handshake h) {
                        h.advance();
                    }
                }
                selector.selectedKeys().clear();
            }
            List<RingConnection> left = new ArrayList<>();
            List<RingConnection> right = new ArrayList<>();
            for (ListenSlot s : listenSlots) {
                // named by the peer's own hostfile address (where its process runs), not this rank's listening one
                List<RingHostfile.Address> peer = settings.hostfile().addresses(leftRank);
                String peerAddress = peer.get(Math.min(s.listener.index(), peer.size() - 1)).text();
                left.add(new RingConnection(s.result, "left[" + s.listener.index() + "]", leftRank, peerAddress));
            }
            for (ConnectSlot s : connectSlots) {
                right.add(new RingConnection(s.result, "right[" + s.target.index() + "]", rightRank, s.target.text()));
            }
            log.log("connected: " + right.size() + " connection(s) to right neighbour rank " + rightRank + ", "
                    + left.size() + " from left neighbour rank " + leftRank + " in "
                    + (System.nanoTime() - start) / 1_000_000 + " ms");
            ok = true;
            return new Connections(List.copyOf(left), List.copyOf(right));
        } catch (IOException e) {
            throw new ConnectFailedException("rank " + rank + ": ring set-up failed: " + e, e);
        } finally {
            for (ListenSlot s : listenSlots) {
                closeQuietly(s.listener.channel());
                for (Handshake h : s.pending) closeQuietly(h.channel());
                if (!ok) closeQuietly(s.result);
            }
            for (Listener l : listeners) closeQuietly(l.channel());
            for (ConnectSlot s : connectSlots) {
                if (!ok) {
                    closeQuietly(s.dialer.channel());
                    closeQuietly(s.result);
                }
            }
            if (selector != null) {
                try {
                    selector.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
    }

    private DistributedException deadlineError(List<ListenSlot> listenSlots, List<ConnectSlot> connectSlots, Duration timeout) {
        String secs = seconds(timeout);
        List<String> failedConnects = new ArrayList<>();
        for (ConnectSlot s : connectSlots) {
            if (s.result != null) continue;
            failedConnects.add("right[" + s.target.index() + "] to " + s.target.text() + " after " + s.dialer.attempts()
                    + " attempt(s)" + (s.dialer.lastError() == null ? "" : " (last: " + s.dialer.lastError() + ")"));
        }
        List<String> missingAccepts = new ArrayList<>();
        for (ListenSlot s : listenSlots) {
            if (s.result == null) {
                missingAccepts.add("left[" + s.listener.index() + "] on " + s.listener.text()
                        + (s.rejected > 0 ? " (" + s.rejected + " connection(s) failed authentication)" : ""));
            }
        }
        String acceptPart = missingAccepts.isEmpty() ? "" : "; left neighbour rank " + leftRank
                + " never connected to " + String.join(", ", missingAccepts);
        if (!failedConnects.isEmpty()) {
            return new ConnectFailedException("rank " + rank + " could not connect to its right neighbour rank " + rightRank
                    + " within " + secs + " s (JDIST_TIMEOUT): " + String.join(", ", failedConnects) + acceptPart
                    + ". Is rank " + rightRank + " running with the same hostfile, is its address right, "
                    + "and is no firewall in the way?");
        }
        return new DeadlineExceededException("rank " + rank + ": left neighbour rank " + leftRank + " did not connect within "
                + secs + " s (JDIST_TIMEOUT)" + acceptPart.replaceFirst("^; left neighbour rank \\d+ never connected to", ":")
                + ". Is rank " + leftRank + " running (MLX_RANK=" + leftRank + ") with the same hostfile, and can it reach "
                + "this host?" + (auth != null ? " Do all ranks have the same JDIST_JOB_TOKEN?" : ""));
    }

    static String seconds(Duration d) {
        return dev.jdist.spi.JdistTimeout.seconds(d);
    }

    static void closeQuietly(java.io.Closeable c) {
        Sockets.closeQuietly(c);
    }

    // ------------------------------------------------------------------ accepting

    private final class ListenSlot {
        final Listener listener;
        final List<Handshake> pending = new ArrayList<>();
        SocketChannel result;
        int rejected;

        ListenSlot(Listener listener) { this.listener = listener; }

        void acceptAll(Selector selector) throws IOException {
            while (result == null) {
                SocketChannel ch = Sockets.acceptNext(listener.channel());
                if (ch == null) return;
                if (auth == null) {
                    complete(ch);
                    return;
                }
                if (pending.size() >= MAX_PENDING_HANDSHAKES) closeQuietly(pending.removeFirst().channel());
                Handshake h = new Handshake(ch, "authentication", new RingHandshake(this, null, listener.index()));
                pending.add(h);
                try {
                    h.start(selector);
                } catch (IOException e) {
                    reject(h, "closed before authenticating");
                }
            }
        }

        void complete(SocketChannel ch) {
            result = ch;
            log.log("accepted connection " + listener.index() + " on " + listener.text() + " from left neighbour rank " + leftRank);
            closeQuietly(listener.channel());
            for (Handshake h : pending) if (h.channel() != ch) closeQuietly(h.channel());
            pending.clear();
        }

        void reject(Handshake h, String why) {
            rejected++;
            pending.remove(h);
            String from;
            try {
                from = String.valueOf(h.channel().getRemoteAddress());
            } catch (IOException e) {
                from = "?";
            }
            closeQuietly(h.channel());
            log.log("dropped a connection from " + from + " on " + listener.text() + ": " + why + "; still waiting for rank " + leftRank);
        }
    }

    // ------------------------------------------------------------------ connecting

    private final class ConnectSlot implements Dialer.Events {
        final Target target;
        final Selector selector;
        final Dialer dialer;
        SocketChannel result;

        ConnectSlot(Target target, Selector selector) {
            this.target = target;
            this.selector = selector;
            this.dialer = new Dialer(selector, target.address(), this);
        }

        @Override
        public void attemptFailed(IOException e) {
            int attempts = dialer.attempts();
            if (log.verbose() && (attempts <= 3 || attempts % 10 == 0)) {
                log.log("connect to rank " + rightRank + " at " + target.text() + " failed (" + dialer.lastError() + "), attempt "
                        + attempts + "; retrying");
            }
        }

        @Override
        public void connected(SocketChannel channel) throws IOException {
            if (auth == null) {
                SelectionKey key = channel.keyFor(selector);
                if (key != null) key.cancel();
                done(channel);
                return;
            }
            new Handshake(channel, "authentication", new RingHandshake(null, this, target.index())).start(selector);
        }

        void done(SocketChannel ch) {
            result = ch;
            log.log("connected " + target.index() + " to right neighbour rank " + rightRank + " at " + target.text()
                    + " (attempt " + dialer.attempts() + ")");
        }

        void authFailed(String why) {
            throw new ConnectFailedException("rank " + rank + ": the process at " + target.text() + " (right neighbour rank "
                    + rightRank + ", connection " + target.index() + ") " + why + "; do all ranks of the job have the same "
                    + "JDIST_JOB_TOKEN (the launcher sets it per job), and is that really rank " + rightRank + "?");
        }
    }

    // ------------------------------------------------------------------ the authentication handshake (§9)

    /** Either side of the ring's authentication handshake on connection {@code index} ({@link RingAuthenticator}). */
    private final class RingHandshake implements Handshake.Side {
        /** The acceptor's slot, or null on the connector side. */
        final ListenSlot listenSlot;
        /** The connector's slot, or null on the acceptor side. */
        final ConnectSlot connectSlot;
        final int index;
        int stage;
        final byte[] myNonce = RingAuthenticator.nonce();
        byte[] peerNonce;

        RingHandshake(ListenSlot ls, ConnectSlot cs, int index) {
            this.listenSlot = ls;
            this.connectSlot = cs;
            this.index = index;
        }

        @Override
        public Handshake.Step first() {
            if (listenSlot != null) return Handshake.Step.of(null, RingAuthenticator.HELLO);
            return Handshake.Step.of(ByteBuffer.allocate(RingAuthenticator.HELLO).put(RingAuthenticator.MAGIC).put(myNonce).flip(),
                    RingAuthenticator.CHALLENGE_REPLY);
        }

        @Override
        public Handshake.Step received(byte[] got) {
            if (listenSlot != null) {
                if (stage++ == 0) {
                    if (!RingAuthenticator.same(Arrays.copyOf(got, 8), RingAuthenticator.MAGIC)) {
                        return Handshake.Step.fail("did not start the jdist authentication handshake");
                    }
                    peerNonce = Arrays.copyOfRange(got, 8, 8 + RingAuthenticator.NONCE);
                    return Handshake.Step.of(ByteBuffer.allocate(RingAuthenticator.CHALLENGE_REPLY).put(myNonce)
                            .put(auth.acceptorMac(index, peerNonce, myNonce)).flip(), RingAuthenticator.MAC);
                }
                if (!RingAuthenticator.same(got, auth.connectorMac(index, myNonce, peerNonce))) {
                    return Handshake.Step.fail("proved a different job token");
                }
                return Handshake.Step.last(ByteBuffer.allocate(1).put(RingAuthenticator.ACCEPTED).flip());
            }
            if (stage++ == 0) {
                peerNonce = Arrays.copyOf(got, RingAuthenticator.NONCE);
                byte[] mac = Arrays.copyOfRange(got, RingAuthenticator.NONCE, RingAuthenticator.CHALLENGE_REPLY);
                if (!RingAuthenticator.same(mac, auth.acceptorMac(index, myNonce, peerNonce))) {
                    return Handshake.Step.fail("failed authentication (it does not know this job's token)");
                }
                return Handshake.Step.of(ByteBuffer.allocate(RingAuthenticator.MAC).put(auth.connectorMac(index, peerNonce, myNonce)).flip(), 1);
            }
            if (got[0] != RingAuthenticator.ACCEPTED) return Handshake.Step.fail("rejected this rank's authentication");
            return Handshake.Step.last(null);
        }

        @Override
        public void finished(Handshake h) {
            h.key().cancel();
            if (listenSlot != null) listenSlot.complete(h.channel());
            else connectSlot.done(h.channel());
        }

        /**
         * A jdist acceptor answers every hello before it judges the token, so a connector whose connection ends before
         * any answer has not met its neighbour: something in between (a proxy, a service mesh's sidecar, a NAT relay)
         * accepted it for a neighbour that is not listening yet. That is retried like a refused connection.
         */
        @Override
        public boolean endedUnanswered(Handshake h, IOException cause) {
            if (connectSlot == null) return false;
            connectSlot.dialer.failed(cause != null ? cause : new IOException("the connection was accepted and closed before "
                    + "the handshake's first answer (a proxy or NAT in between whose target is not listening yet?)"));
            return true;
        }

        @Override
        public void failed(Handshake h, String why) {
            if (listenSlot != null) {
                listenSlot.reject(h, why);
            } else {
                closeQuietly(h.channel());
                connectSlot.authFailed(why.startsWith("closed") ? "closed the connection during authentication (it "
                        + "rejected this rank's token)" : why);
            }
        }
    }
}
