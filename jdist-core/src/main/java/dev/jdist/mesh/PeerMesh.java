package dev.jdist.mesh;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.connect.Dialer;
import dev.jdist.connect.Handshake;
import dev.jdist.connect.Sockets;
import dev.jdist.shm.ShmFiles;
import dev.jdist.spi.JdistTimeout;
import dev.jdist.spi.Liveness;
import dev.jdist.spi.WatchVerdict;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static dev.jdist.connect.Sockets.closeQuietly;

/**
 * Direct connections between any two members of a group whose members are all jdist (docs/reference/collectives.md §10.1–§10.2):
 * the medium of the size-aware algorithms and of any operation that needs a peer other than a ring neighbour.
 *
 * <p>Life cycle. (1) Every member binds a listener ({@link #listen}) and builds its {@link #record}; (2) the members
 * all-gather their records over a channel they already have (the ring) — the mesh never sends a byte until then, so it
 * is used only when the caller knows every member is jdist; (3) {@link #form} checks the records (the settings digests
 * must agree) and from then on the listener accepts. Connections are made on demand: {@link #connect} before an
 * operation, for the peers it needs; the lower rank of a pair connects, the higher accepts; both prove the job token
 * (or, without one, the group's identity) with the ring's handshake ({@link Proofs}: the caller passes the ring's
 * {@code RingAuthenticator}) bound to both ranks and to the group. A connection stays open until {@link #close()} or a failure.
 * With {@link Settings#shmLinkBytes()} (the ring runs over shared memory, or the job spans several hosts), a pair on
 * one host then agrees on a
 * shared-memory file over the new connection ({@link MeshShm}), and its byte streams run through two {@link
 * dev.jdist.shm.ShmLink}s; the connection stays for doorbells and to tell when the peer is gone. A pair that cannot (a
 * full {@code /dev/shm}, another container) stays on TCP, with one line on stderr.
 *
 * <p>Waiting. One selector watches the listener, the handshakes in progress and every connection. A transport that runs
 * an operation sets its connections' interest and calls {@link #await}, which also accepts and authenticates members
 * connecting meanwhile (a member already in a later operation), so no member waits on another that is busy elsewhere.
 * The attempts and the handshake's byte exchange are {@link dev.jdist.connect}'s, shared with the ring's connector; the
 * mesh's handshake bytes are {@link MeshHandshake}'s.
 *
 * <p>Failures. Every connect, accept, handshake, read and write is bounded by {@code JDIST_TIMEOUT}. The first failure
 * breaks the mesh ({@link #breakWith}): it closes every connection and the listener, so the members it talks to fail
 * too, and every later use fails at once with the same cause. Messages name this rank, the peer, and its address.
 *
 * <p>Threads: one operation at a time ({@link dev.jdist.Group} serialises them); {@link #close()} may come from any thread.
 */
public final class PeerMesh implements AutoCloseable {

    /**
     * One member: where it listens for mesh connections, which host it runs on ({@link #thisHostId()}), and the digest
     * of the settings every member must share.
     */
    public record Member(int rank, InetSocketAddress address, long hostId, long settingsDigest) {
        /** {@code host:port}, as messages name it. */
        public String text() { return address.getAddress().getHostAddress() + ":" + address.getPort(); }
    }

    /**
     * The two proofs of a handshake, keyed with one secret: HMAC-SHA256 of a fixed label, the channel number and two
     * 32-byte values (docs/reference/collectives.md §9). The ring's {@code RingAuthenticator} is one; the mesh takes it from the
     * caller so that this package depends on no backend.
     */
    public interface Proofs {
        byte[] acceptorMac(int channel, byte[] nonceC, byte[] nonceA);

        byte[] connectorMac(int channel, byte[] nonceA, byte[] nonceC);
    }

    /**
     * How this member connects.
     *
     * @param rank       this member's rank in the group
     * @param timeout    {@code JDIST_TIMEOUT}: the longest any connect, handshake, or wait for bytes may go without progress
     * @param jobToken   {@code JDIST_JOB_TOKEN}, or null
     * @param spinMicros how long an operation polls before sleeping in the selector ({@code JDIST_RING_SPIN_US})
     * @param verbose    {@code MLX_RING_VERBOSE}: log connection progress on stderr
     * @param who        how log lines name this member ({@code rank 2}, {@code rank 2 -> split colour 1 rank 0})
     * @param proofs     the proofs keyed with a secret (the job token, or the group's identity without one)
     * @param shmLinkBytes 0: every pair talks TCP; otherwise pairs on one host run through shared memory, with links of
     *                   about this many bytes ({@code JDIST_SHM_BUFFER_KIB}; lowered for large meshes); every member must
     *                   pass 0 or not alike (the ring's {@code JDIST_TRANSPORT=shm} set-up has checked that; otherwise the
     *                   members' settings digests carry the choice)
     * @param shmOnlyAcrossHosts with {@code shmLinkBytes}: use shared memory only when the members span several hosts (the
     *                   hierarchy's case), so that a one-host job keeps its pairs on TCP unless its ring runs over shared memory
     */
    public record Settings(int rank, Duration timeout, String jobToken, long spinMicros, boolean verbose, String who,
                           Function<String, Proofs> proofs, long shmLinkBytes, boolean shmOnlyAcrossHosts) {}

    /** How the shared-memory files of mesh pairs are named in {@code /dev/shm}: this, the creator's pid, '-', random. */
    public static final String SHARED_MEMORY_FILE_PREFIX = MeshShm.FILE_PREFIX;
    /** Bytes of one member's record in the exchange: IPv4, port, host id, settings digest (little-endian). */
    public static final int RECORD_BYTES = 24;
    /** The handshake's channel number ({@code "MESH"}): apart from the ring's connection indices and the store's. */
    static final int CHANNEL = 0x4D455348;
    static final byte[] MAGIC = "JDISTMS1".getBytes(StandardCharsets.US_ASCII);
    static final int NONCE = 32;
    static final int MAC = 32;
    static final int HELLO = 8 + 8 + 4 + 4 + NONCE;
    static final int CHALLENGE_REPLY = NONCE + MAC;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int BACKLOG = 64;
    private static final int MAX_PENDING_HANDSHAKES = 64;
    /** A refused connection after the exchange means the member no longer listens; a few quick retries, then fail. */
    private static final int REFUSED_ATTEMPTS = 4;

    private final Settings settings;
    private final int rank;
    private final List<Member> members;
    private final byte[] meshId;
    private final Proofs auth;
    /** {@code JDIST_TIMEOUT}, or the liveness watch's progress deadline once it runs. */
    private volatile long timeoutNanos;
    private volatile String timeoutText;
    /** The liveness watch's verdict, when every member is jdist and the watch ended the mesh from its own thread. */
    private final WatchVerdict watch = new WatchVerdict();
    private final Selector selector;
    private final ServerSocketChannel listener;
    private final PeerConnection[] connections;
    private final Outgoing[] outgoing;
    private final List<Handshake> pending = new ArrayList<>();
    /** What was dropped on the listener (failed handshakes), for the deadline message. */
    private final List<String> dropped = new ArrayList<>();
    /** The mappings of the pairs that run over shared memory; unmapped by {@link #close()}. */
    private final Arena shared = Arena.ofShared();
    /** Shared-memory files this member created and offered, until deleted (at the answer, or when the mesh ends). */
    private final List<Path> offered = new ArrayList<>();
    /** The link capacity of a pair this member creates; 0 when every pair talks TCP. */
    private final long shmCapacity;
    private volatile DistributedException broken;
    private volatile boolean closed;

    private PeerMesh(Settings settings, List<Member> members, byte[] meshId, ServerSocketChannel listener, Selector selector) {
        this.settings = settings;
        this.rank = settings.rank();
        this.members = List.copyOf(members);
        this.meshId = meshId;
        // Without a job token the proof only binds a connection to this group (MLX's trust model, like the ring's).
        this.auth = settings.proofs().apply(settings.jobToken() != null ? settings.jobToken()
                : "jdist-mesh " + HexFormat.of().formatHex(meshId));
        setTimeout(settings.timeout());
        this.listener = listener;
        this.selector = selector;
        this.connections = new PeerConnection[members.size()];
        this.outgoing = new Outgoing[members.size()];
        boolean shm = settings.shmLinkBytes() > 0 && (!settings.shmOnlyAcrossHosts() || hosts() > 1);
        this.shmCapacity = shm ? MeshShm.capacity(settings.shmLinkBytes(), members.size()) : 0;
    }

    // ------------------------------------------------------------------ set-up

    /**
     * Binds a mesh listener on {@code ip}, port chosen by the system; {@code owner} names it in errors. The backlog holds
     * the reachability probes of every other member ({@link #probe}) as well as the connections that follow.
     */
    public static ServerSocketChannel listen(InetAddress ip, String owner, int members) {
        try {
            return Sockets.listen(new InetSocketAddress(ip, 0), Math.max(BACKLOG, 2 * members));
        } catch (IOException e) {
            throw new ConfigException(owner + " cannot listen for mesh connections on " + ip.getHostAddress() + ": " + e.getMessage()
                    + "; that address must be one of this host's (the ring's own address)", e);
        }
    }

    /** This member's record for the exchange: the listener's address and port, the host id, the settings digest (8 bytes). */
    public static byte[] record(ServerSocketChannel listener, long hostId, byte[] settingsDigest) {
        InetSocketAddress a;
        try {
            a = (InetSocketAddress) listener.getLocalAddress();
        } catch (IOException e) {
            throw new ConfigException("cannot read the mesh listener's address: " + e, e);
        }
        if (!(a.getAddress() instanceof Inet4Address ip4)) {
            throw new ConfigException("the mesh listens on " + a + ", which is not an IPv4 address");
        }
        return ByteBuffer.allocate(RECORD_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(ip4.getAddress()).putInt(a.getPort())
                .putLong(hostId).put(Arrays.copyOf(settingsDigest, 8)).array();
    }

    /**
     * Forms the mesh from every member's record, in rank order ({@code all}: {@code size * RECORD_BYTES} bytes, the same on
     * every member). Members whose settings digests differ are named in one {@link ConfigException} ({@code settingsName}
     * says which settings: {@code JDIST_ALGO, JDIST_ALGO_RULES and JDIST_TRANSPORT}), the same on every member. Takes the listener (closed
     * on failure).
     */
    public static PeerMesh form(Settings settings, ServerSocketChannel listener, byte[] all, String settingsName) {
        Selector selector = null;
        try {
            List<Member> members = decode(all);
            checkDigests(members, settingsName);
            byte[] id = MessageDigest.getInstance("SHA-256").digest(all);
            selector = Selector.open();
            PeerMesh mesh = new PeerMesh(settings, members, id, listener, selector);
            listener.register(selector, SelectionKey.OP_ACCEPT, mesh.new Accepting());
            mesh.log("mesh of " + members.size() + " listening on " + members.get(settings.rank()).text());
            return mesh;
        } catch (IOException | NoSuchAlgorithmException | RuntimeException e) {
            closeQuietly(listener);
            closeQuietly(selector);
            if (e instanceof RuntimeException re) throw re;
            throw new ConnectFailedException("rank " + settings.rank() + ": cannot set up the mesh: " + e, e);
        }
    }

    static List<Member> decode(byte[] all) {
        if (all.length == 0 || all.length % RECORD_BYTES != 0) {
            throw new IllegalArgumentException("mesh records of " + all.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        List<Member> members = new ArrayList<>();
        for (int q = 0; q < all.length / RECORD_BYTES; q++) {
            byte[] ip = new byte[4];
            b.get(ip);
            int port = b.getInt();
            long host = b.getLong();
            long digest = b.getLong();
            try {
                members.add(new Member(q, new InetSocketAddress(InetAddress.getByAddress(ip), port), host, digest));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return members;
    }

    private static void checkDigests(List<Member> members, String settingsName) {
        Map<Long, List<Integer>> groups = new LinkedHashMap<>();
        for (Member m : members) groups.computeIfAbsent(m.settingsDigest(), d -> new ArrayList<>()).add(m.rank());
        if (groups.size() == 1) return;
        List<String> parts = new ArrayList<>();
        for (List<Integer> ranks : groups.values()) parts.add("ranks " + ranks);
        throw new ConfigException("the ranks were started with different " + settingsName + ": " + String.join(" differ from ", parts)
                + "; every rank must choose its algorithms alike, so give every rank the same values, the same rules file and "
                + "the same jdist build");
    }

    /** An identity of this host's running kernel (Linux's boot id, else the host name), as 8 bytes. */
    public static long thisHostId() {
        String id;
        try {
            id = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
        } catch (IOException | RuntimeException e) {
            try {
                id = "host:" + InetAddress.getLocalHost().getHostName();
            } catch (IOException ex) {
                id = "host:unknown";
            }
        }
        return hostIdOf(id);
    }

    /** A host identity as 8 bytes: the first 8 of SHA-256 over {@code text}. */
    public static long hostIdOf(String text) {
        try {
            return ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8))).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available in this JVM", e);
        }
    }

    // ------------------------------------------------------------------ what the mesh knows

    public int rank() { return rank; }

    public int size() { return members.size(); }

    public Member member(int q) { return members.get(q); }

    /** Whether members {@code a} and {@code b} run on one host. */
    public boolean sameHost(int a, int b) { return members.get(a).hostId() == members.get(b).hostId(); }

    // ------------------------------------------------------------------ reachability (docs/reference/collectives.md §10.1)

    /**
     * Tries one TCP connection to every higher-ranked member on another host, at its mesh address, all at once, and
     * closes each as soon as it is made: the connections this member would open later ({@link #connect}). Returns
     * {@link #size()} bytes, byte q a {@link MeshReach.Outcome} code for member q ({@code REACHED} for the members not
     * probed). Blocks at most {@code limit}; a member whose connection is still pending then counts as timed out.
     */
    public byte[] probe(Duration limit) {
        byte[] outcome = new byte[size()];
        Map<SocketChannel, Integer> waiting = new LinkedHashMap<>();
        try (Selector probes = Selector.open()) {
            for (int q = rank + 1; q < size(); q++) {
                if (sameHost(rank, q)) continue;
                SocketChannel ch = null;
                try {
                    ch = SocketChannel.open(StandardProtocolFamily.INET);
                    ch.configureBlocking(false);
                    if (ch.connect(members.get(q).address())) {
                        closeQuietly(ch);
                    } else {
                        ch.register(probes, SelectionKey.OP_CONNECT);
                        waiting.put(ch, q);
                    }
                } catch (IOException e) {
                    closeQuietly(ch);
                    outcome[q] = probeFailed(q, e);
                }
            }
            long end = System.nanoTime() + limit.toNanos();
            while (!waiting.isEmpty()) {
                long left = end - System.nanoTime();
                if (left <= 0) break;
                probes.select(Math.max(1, left / 1_000_000));
                for (SelectionKey key : probes.selectedKeys()) {
                    SocketChannel ch = (SocketChannel) key.channel();
                    int q = waiting.remove(ch);
                    try {
                        ch.finishConnect();
                    } catch (IOException e) {
                        outcome[q] = probeFailed(q, e);
                    }
                    key.cancel();
                    closeQuietly(ch);
                }
                probes.selectedKeys().clear();
            }
            for (Map.Entry<SocketChannel, Integer> w : waiting.entrySet()) {   // still pending: closed below
                outcome[w.getValue()] = (byte) MeshReach.Outcome.TIMED_OUT.ordinal();
                log("probe of rank " + w.getValue() + " at " + members.get(w.getValue()).text() + ": no answer within " + limit.toMillis() + " ms");
            }
        } catch (IOException e) {
            throw new ConnectFailedException("rank " + rank + ": cannot probe the mesh's members: " + e, e);
        } finally {
            for (SocketChannel ch : waiting.keySet()) closeQuietly(ch);
        }
        return outcome;
    }

    private byte probeFailed(int q, IOException e) {
        log("probe of rank " + q + " at " + members.get(q).text() + ": " + e);
        return (byte) MeshReach.Outcome.of(e).ordinal();
    }

    /** How many distinct hosts the members run on. */
    public int hosts() { return (int) members.stream().mapToLong(Member::hostId).distinct().count(); }

    /** {@code JDIST_TIMEOUT} in nanoseconds. */
    public long timeoutNanos() { return timeoutNanos; }

    /** {@code JDIST_TIMEOUT} as messages say it, in seconds. */
    public String timeoutText() { return timeoutText; }

    /** {@code JDIST_RING_SPIN_US} in nanoseconds. */
    public long spinNanos() { return settings.spinMicros() * 1000; }

    /** The connection to {@code peer}, or null when none is made yet. */
    public PeerConnection connection(int peer) { return connections[peer]; }

    /** How many connections are open (for tests and logs). */
    public int openConnections() {
        int c = 0;
        for (PeerConnection p : connections) if (p != null) c++;
        return c;
    }

    /** How many open connections carry their bytes through shared memory (for tests and logs). */
    public int sharedMemoryConnections() {
        int c = 0;
        for (PeerConnection p : connections) if (p != null && p.sharedMemory()) c++;
        return c;
    }

    /** Whether the pair with {@code peer} tries shared memory once connected: this mesh uses it, and one host. */
    private boolean sharedMemoryPair(int peer) { return shmCapacity > 0 && sameHost(rank, peer); }

    /** The first 8 bytes of the mesh id, as a number: ties a pair's shared-memory file to this group. */
    private long meshTag() { return ByteBuffer.wrap(meshId, 0, 8).getLong(); }

    /** A pair that could not set up shared memory runs over TCP: said once, on stderr, whatever the verbosity. */
    private void sharedMemoryRefused(int peer, String why) {
        System.err.println("jdist: " + settings.who() + " (mesh): no shared memory with rank " + peer + " (" + why
                + "); this pair runs over TCP. Free space in /dev/shm (`df -h /dev/shm`), lower JDIST_SHM_BUFFER_KIB, "
                + "or give the ranks one /dev/shm (one container) to use it");
    }

    // ------------------------------------------------------------------ connecting on demand

    /**
     * Makes sure a connection to each of {@code peers} exists, making the missing ones (every peer must do the same
     * for this rank around the same time: both ends of a pair call it, as both run the operation that needs it).
     * Bounded by {@code JDIST_TIMEOUT}; {@code opName} names the operation in errors. A failure breaks the mesh.
     */
    public void connect(int[] peers, String opName) {
        checkUsable(opName);
        if (allConnected(peers)) return;
        try {
            long start = System.nanoTime();
            long deadline = start + timeoutNanos;
            for (int p : peers) {
                if (p == rank || p < 0 || p >= size()) throw new IllegalArgumentException("rank " + rank + " cannot connect to rank " + p);
                if (connections[p] == null && p > rank && outgoing[p] == null) outgoing[p] = new Outgoing(p);
            }
            while (!allConnected(peers)) {
                long now = System.nanoTime();
                if (now - deadline >= 0) throw connectDeadline(peers, opName);
                long wake = deadline;
                for (int p : peers) {
                    Outgoing o = outgoing[p];
                    if (o != null) wake = o.dialIfDue(now, wake, opName);
                }
                if (allConnected(peers)) break;
                checkAborted();
                select(Dialer.millisUntil(wake), opName);
            }
            log("connected to rank(s) " + Arrays.toString(peers) + " for " + opName + " in " + (System.nanoTime() - start) / 1_000 + " µs");
        } catch (DistributedException e) {
            breakWith(e);
            throw e;
        }
    }

    private boolean allConnected(int[] peers) {
        for (int p : peers) if (connections[p] == null) return false;
        return true;
    }

    /**
     * Waits up to {@code millis} (at least 1) for a socket event, handling the mesh's own (members connecting, handshakes)
     * on the way; a transport calls it when nothing can move. Returns early on any event.
     */
    public void await(long millis, String opName) {
        select(Math.max(1, millis), opName);
    }

    private void select(long millis, String opName) {
        try {
            selector.select(millis);
            for (SelectionKey key : selector.selectedKeys()) {
                if (!key.isValid()) continue;
                Object a = key.attachment();
                if (a instanceof Accepting acc) acc.acceptAll();
                else if (a instanceof Handshake h) h.advance();
                else if (a instanceof Dialer d) d.finishConnect();
            }
            selector.selectedKeys().clear();
        } catch (IOException | ClosedSelectorException e) {
            if (closed) throw new PeerLostException("rank " + rank + ": " + opName + " failed: the group was closed", e);
            throw new PeerLostException("rank " + rank + ": " + opName + " failed: the mesh's selector failed: " + e, e);
        }
    }

    private DistributedException connectDeadline(int[] peers, String opName) {
        List<String> lines = new ArrayList<>();
        for (int p : peers) {
            if (connections[p] != null) continue;
            Member m = members.get(p);
            Outgoing o = outgoing[p];
            if (o != null) {
                lines.add("connecting to rank " + p + " at " + m.text() + " (" + o.dialer.attempts() + " attempt(s)"
                        + (o.dialer.lastError() == null ? ", no answer to the handshake" : ", last: " + o.dialer.lastError()) + ")");
            } else {
                lines.add("waiting for rank " + p + " (" + m.text() + ") to connect");
            }
        }
        String msg = "rank " + rank + ": " + opName + " could not open mesh connections within " + timeoutText + " s (JDIST_TIMEOUT): "
                + String.join("; ", lines) + (dropped.isEmpty() ? "" : "; dropped on the listener: " + String.join(", ", dropped))
                + ". Is every rank running the same sequence of operations, can they reach each other's addresses (no "
                + "firewall between them), and do they share one JDIST_JOB_TOKEN? The group is closed.";
        boolean anyOutgoing = false;
        for (int p : peers) anyOutgoing |= connections[p] == null && outgoing[p] != null && outgoing[p].dialer.lastError() != null;
        return anyOutgoing ? new ConnectFailedException(msg) : new DeadlineExceededException(msg);
    }

    // ------------------------------------------------------------------ state

    /** Throws when the mesh is broken (same kind as the first failure) or closed. */
    public void checkUsable(String opName) {
        DistributedException b = broken;
        if (b != null) {
            String msg = "rank " + rank + ": " + opName + " cannot run: the group broke earlier: " + b.getMessage();
            if (b instanceof DeadlineExceededException) throw new DeadlineExceededException(msg, b);
            throw new PeerLostException(msg, b);
        }
        if (closed) throw new IllegalStateException("rank " + rank + ": " + opName + " on a closed group");
    }

    /** The first failure, or null. */
    public DistributedException broken() { return broken; }

    private void setTimeout(java.time.Duration timeout) {
        this.timeoutText = JdistTimeout.seconds(timeout);
        this.timeoutNanos = timeout.toNanos();
    }

    /**
     * The job's liveness watch runs (docs/reliability.md): operations wait for progress up to its deadline, and a failure
     * it finds anywhere in the job ends the mesh at once — its sockets close, a waiting operation wakes and throws the
     * watch's error ({@link #checkAborted}) instead of waiting for the deadline.
     */
    public void useLiveness(Liveness liveness) {
        setTimeout(liveness.progressDeadline());
        watch.listen(liveness, cause -> {
            if (closed) return;
            breakWith(cause);
            selector.wakeup();
        });
    }

    /** Throws the watch's error when it ended the mesh; transports call it where they would otherwise sleep. */
    public void checkAborted() { watch.check(); }

    /**
     * The error to throw for {@code e}, a failure seen by an operation: when the watch ended the mesh, its error (it says
     * where the failure began), with {@code e} suppressed; otherwise {@code e}.
     */
    public DistributedException explain(DistributedException e) { return watch.explain(e); }

    /** When the watch ended the mesh: its error, with {@code e} (what closing the sockets caused) suppressed; else null. */
    public DistributedException watchCause(Throwable e) { return watch.cause(e); }

    /** An operation's own failure, told to the peers (through the watch) before the mesh closes its connections. */
    public void failing(DistributedException e) { watch.failing(e); }

    /**
     * Breaks the mesh for good: remembers the first cause and closes every connection and the listener, so that the
     * members this one talks to fail too (they see the connection end) and later operations fail at once.
     */
    public void breakWith(DistributedException cause) {
        if (broken == null) broken = cause;
        log("mesh broken: " + cause.getMessage());
        closeSockets();
    }

    /** Deletes a pair's shared-memory file this member created. */
    private void unlink(Path p) {
        ShmFiles.deleteQuietly(p);
        synchronized (offered) {
            offered.remove(p);
        }
    }

    private void closeSockets() {
        synchronized (offered) {   // offers never answered (the peer hung or failed mid-handshake): nothing stays behind
            for (Path p : offered) ShmFiles.deleteQuietly(p);
            offered.clear();
        }
        closeQuietly(listener);
        for (PeerConnection c : connections) if (c != null) closeQuietly(c.channel());
        for (Outgoing o : outgoing) if (o != null) closeQuietly(o.dialer.channel());
        synchronized (pending) {
            for (Handshake h : pending) closeQuietly(h.channel());
        }
    }

    /** Closes every connection, the listener and the selector. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        closeSockets();
        closeQuietly(selector);
        try {
            shared.close();
        } catch (IllegalStateException ignored) {
            // an operation on another thread still uses a mapping; the memory goes with the process
        }
    }

    void log(String message) {
        if (settings.verbose()) System.err.println("[ring] " + settings.who() + " (mesh): " + message);
    }

    private static byte[] nonce() {
        byte[] b = new byte[NONCE];
        RANDOM.nextBytes(b);
        return b;
    }

    /** The handshake's proofs are bound to this group and to both ranks (docs/reference/collectives.md §10.2). */
    private byte[] binding(int connectorRank, int acceptorRank, byte[] nonceC) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            d.update(meshId);
            d.update(ByteBuffer.allocate(8).putInt(connectorRank).putInt(acceptorRank).array());
            d.update(nonceC);
            return d.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private void established(SocketChannel ch, int peer, boolean initiated, SelectionKey key, MeshShm.Links links) {
        key.interestOps(0);
        PeerConnection c = new PeerConnection(ch, peer, members.get(peer).text(), initiated, key,
                links == null ? null : links.out(), links == null ? null : links.in());
        key.attach(c);
        connections[peer] = c;
        log((initiated ? "connected to" : "accepted") + " " + c.describe());
    }

    // ------------------------------------------------------------------ accepting

    /** The listener's attachment: accepts every waiting connection and starts its handshake. */
    private final class Accepting {
        void acceptAll() throws IOException {
            SocketChannel ch;
            while ((ch = Sockets.acceptNext(listener)) != null) {
                synchronized (pending) {
                    if (pending.size() >= MAX_PENDING_HANDSHAKES) closeQuietly(pending.removeFirst().channel());
                    Handshake h = new Handshake(ch, WHAT, new MeshHandshake(-1, "a collective"));
                    pending.add(h);
                    h.start(selector);
                }
            }
        }
    }

    // ------------------------------------------------------------------ connecting

    /** This rank's connection attempts to a higher rank. */
    private final class Outgoing implements Dialer.Events {
        final int peer;
        final Dialer dialer;
        int refused;
        /** The operation that needs the connection, for messages. */
        String opName;

        Outgoing(int peer) {
            this.peer = peer;
            this.dialer = new Dialer(selector, members.get(peer).address(), this);
        }

        long dialIfDue(long now, long wake, String opName) {
            this.opName = opName;
            try {
                return dialer.dialIfDue(now, wake);
            } catch (IOException e) {   // no socket could be opened: a failed attempt like any other
                dialer.failed(e);
                return wake;
            }
        }

        @Override
        public void connected(SocketChannel channel) throws IOException {
            new Handshake(channel, WHAT, new MeshHandshake(peer, opName)).start(selector);
        }

        @Override
        public void attemptFailed(IOException e) {
            String lastError = dialer.lastError();
            if (lastError.contains("refused") && ++refused >= REFUSED_ATTEMPTS) {
                throw new PeerLostException("rank " + rank + ": " + opName + " cannot connect to rank " + peer + " at "
                        + members.get(peer).text() + ": " + lastError + " (" + dialer.attempts() + " attempts). Rank " + peer
                        + " no longer listens for mesh connections: it exited, crashed, or closed the group; check its output. "
                        + "The group is closed.", e);
            }
            log("connect to rank " + peer + " at " + members.get(peer).text() + " failed (" + lastError + "), attempt " + dialer.attempts());
        }

        /** The handshake failed: the process at the address is not this group's member {@code peer}. */
        void rejected(String why, String opName) {
            throw new ConnectFailedException("rank " + rank + ": " + opName + ": the process at " + members.get(peer).text()
                    + " (rank " + peer + "'s mesh address) " + why + "; do all ranks of the job have the same JDIST_JOB_TOKEN "
                    + "(the launcher sets it per job), and is that really rank " + peer + " of this group?");
        }
    }

    // ------------------------------------------------------------------ the handshake (docs/reference/collectives.md §10.2)

    /** How the mesh's handshake is named in failures of its connection. */
    private static final String WHAT = "the mesh handshake";

    /**
     * The mesh handshake, either side:
     * <pre>
     *   connector → acceptor  "JDISTMS1" ‖ meshId[0,8) ‖ connector rank (i32) ‖ acceptor rank (i32) ‖ nonceC (32)
     *   acceptor  → connector nonceA (32) ‖ acceptorMac(CHANNEL, B, nonceA) (32)      B = SHA-256(meshId ‖ ranks ‖ nonceC)
     *   connector → acceptor  connectorMac(CHANNEL, nonceA, B) (32)
     *   acceptor  → connector 0x01
     * </pre>
     * then, for a pair on one host of a mesh over shared memory, the offer of a shared-memory file and its answer
     * ({@link MeshShm}).
     */
    private final class MeshHandshake implements Handshake.Side {
        /** The rank connected to (connector side), or -1 on the acceptor side until the hello names it. */
        int peer;
        final boolean connector;
        final String opName;
        int stage;
        final byte[] myNonce = nonce();
        byte[] bind;
        /** Connector: the pair's shared-memory file, while the acceptor has not answered. */
        MeshShm.Created created;
        MeshShm.Links links;

        MeshHandshake(int peer, String opName) {
            this.peer = peer;
            this.connector = peer >= 0;
            this.opName = opName;
        }

        @Override
        public Handshake.Step first() {
            if (!connector) return Handshake.Step.of(null, HELLO);
            bind = binding(rank, peer, myNonce);
            return Handshake.Step.of(ByteBuffer.allocate(HELLO).put(MAGIC).put(meshId, 0, 8).putInt(rank).putInt(peer).put(myNonce).flip(),
                    CHALLENGE_REPLY);
        }

        @Override
        public Handshake.Step received(byte[] got) {
            if (!connector) {
                if (stage == 0) {
                    ByteBuffer b = ByteBuffer.wrap(got);
                    byte[] magic = new byte[8];
                    byte[] tag = new byte[8];
                    b.get(magic).get(tag);
                    int from = b.getInt();
                    int to = b.getInt();
                    byte[] nonceC = new byte[NONCE];
                    b.get(nonceC);
                    if (!Arrays.equals(magic, MAGIC)) return Handshake.Step.fail("did not start the jdist mesh handshake");
                    if (!Arrays.equals(tag, Arrays.copyOf(meshId, 8))) return Handshake.Step.fail("belongs to another group or job");
                    if (to != rank || from < 0 || from >= rank) {
                        return Handshake.Step.fail("claims to be rank " + from + " connecting to rank " + to);
                    }
                    if (connections[from] != null) return Handshake.Step.fail("claims rank " + from + ", which is already connected");
                    peer = from;
                    bind = binding(from, rank, nonceC);
                    stage = 1;
                    return Handshake.Step.of(ByteBuffer.allocate(CHALLENGE_REPLY).put(myNonce).put(auth.acceptorMac(CHANNEL, bind, myNonce))
                            .flip(), MAC);
                }
                if (stage == 1) {
                    if (!MessageDigest.isEqual(got, auth.connectorMac(CHANNEL, myNonce, bind))) {
                        return Handshake.Step.fail("proved a different job token");
                    }
                    ByteBuffer accepted = ByteBuffer.allocate(1).put((byte) 1).flip();
                    if (!sharedMemoryPair(peer)) return Handshake.Step.last(accepted);
                    stage = 3;
                    return Handshake.Step.of(accepted, MeshShm.OFFER);   // the connector answers 0x01 with its offer
                }
                // stage 3: the offer; 0x01 is long sent (the connector waited for it)
                String why;
                if (!MeshShm.offersFile(got)) {
                    why = null;   // the connector could not create the file and has said so
                } else {
                    try {
                        links = MeshShm.open(got, peer, rank, meshTag(), shared);
                        why = null;
                    } catch (IOException | RuntimeException e) {
                        why = "cannot map " + MeshShm.offerText(got) + ", which rank " + peer + " created: " + e.getMessage();
                    }
                }
                if (why != null) sharedMemoryRefused(peer, why);
                return Handshake.Step.last(ByteBuffer.allocate(1).put((byte) (links != null ? 1 : 0)).flip());
            }
            if (stage == 0) {
                byte[] nonceA = Arrays.copyOf(got, NONCE);
                byte[] mac = Arrays.copyOfRange(got, NONCE, CHALLENGE_REPLY);
                if (!MessageDigest.isEqual(mac, auth.acceptorMac(CHANNEL, bind, nonceA))) {
                    return Handshake.Step.fail("failed the mesh handshake (it does not know this job's token, or is not this group's member)");
                }
                stage = 1;
                return Handshake.Step.of(ByteBuffer.allocate(MAC).put(auth.connectorMac(CHANNEL, nonceA, bind)).flip(), 1);
            }
            if (stage == 1) {
                if (got[0] != 1) return Handshake.Step.fail("rejected this rank's mesh handshake");
                if (!sharedMemoryPair(peer)) return Handshake.Step.last(null);
                String why = null;
                try {
                    created = MeshShm.create(shmCapacity, rank, peer, meshTag(), shared);
                    synchronized (offered) {
                        offered.add(created.path());
                    }
                } catch (IOException | RuntimeException e) {
                    why = "cannot create a " + MeshShm.fileBytes(shmCapacity) + "-byte file in " + ShmFiles.directory()
                            + ": " + e.getMessage();
                    sharedMemoryRefused(peer, why);
                }
                stage = 2;
                return Handshake.Step.of(MeshShm.offer(created, why), 1);
            }
            // stage 2: the answer to the offer
            if (created != null) {
                unlink(created.path());
                if (got[0] == 1) links = MeshShm.links(created.map(), created.capacity(), true);
                created = null;
            }
            return Handshake.Step.last(null);
        }

        @Override
        public void finished(Handshake h) {
            if (connector) {
                outgoing[peer] = null;
            } else {
                synchronized (pending) {
                    pending.remove(h);
                }
            }
            if (connections[peer] != null) {   // two handshakes for one pair: keep the first
                closeQuietly(h.channel());
                return;
            }
            established(h.channel(), peer, connector, h.key(), links);
        }

        /** A member's reachability probe ({@link #probe}) connects and closes without a byte: dropped quietly. */
        @Override
        public boolean endedUnanswered(Handshake h, IOException cause) {
            if (connector || cause != null) return false;
            closeQuietly(h.channel());
            synchronized (pending) {
                pending.remove(h);
            }
            return true;
        }

        @Override
        public void failed(Handshake h, String why) {
            if (created != null) unlink(created.path());
            String from;
            try {
                from = String.valueOf(h.channel().getRemoteAddress());
            } catch (IOException | RuntimeException e) {
                from = "?";
            }
            closeQuietly(h.channel());
            if (connector) {
                outgoing[peer].rejected(why.startsWith("closed") ? "closed the connection during the mesh handshake (it rejected "
                        + "this rank's proof)" : why, opName);
            } else {
                synchronized (pending) {
                    pending.remove(h);
                }
                if (dropped.size() < 8) dropped.add(from + " (" + why + ")");
                log("dropped a connection from " + from + ": " + why);
            }
        }
    }
}
