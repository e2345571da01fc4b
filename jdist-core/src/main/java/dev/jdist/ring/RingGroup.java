package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.ConnectFailedException;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.algo.Algorithm;
import dev.jdist.algo.AlgorithmChoice;
import dev.jdist.algo.AlgorithmPolicy;
import dev.jdist.algo.CollectiveKind;
import dev.jdist.algo.HostLayout;
import dev.jdist.algo.MeshAlgorithms;
import dev.jdist.algo.MeshSchedule;
import dev.jdist.algo.PeerOperations;
import dev.jdist.algo.Topology;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.mesh.MeshReach;
import dev.jdist.mesh.MeshTransport;
import dev.jdist.mesh.PeerMesh;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JdistTimeout;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.Liveness;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A ring group (docs/reference/collectives.md §3): this rank's connections to its two neighbours and the
 * operations over them. Schedules come from {@link RingSchedule}, bytes move in a {@link RingTransport}
 * ({@link TcpTransport}, or {@link ShmTransport} with {@code JDIST_TRANSPORT=shm}). A 1-rank ring (hostfile
 * with one entry) has no sockets; {@link dev.jdist.Group} turns its collectives into identities.
 *
 * <p>When every member is known to be jdist ({@link #membersAreJdist}), the group also forms a {@link PeerMesh}
 * (connections to any member, made on demand) and chooses each collective's algorithm by size, rank count and topology
 * ({@link AlgorithmPolicy}, docs/reference/collectives.md §10): the ring, or a mesh algorithm run by a {@link MeshTransport}. Until then, and
 * always with MLX peers, every operation is MLX's ring, byte for byte.
 */
public final class RingGroup implements GroupImpl {

    private final RingSettings settings;
    private final int rank;
    private final int size;
    private final int k;
    private final RingTransport transport;     // null when size == 1
    private final MemorySegment small;         // the small path's padded work vector W (n * itemsize <= 1024)
    private final long sumScatterWorkBytes;    // the bound of sumScatterWork (RingSettings.Tuning)
    private MemorySegment sumScatterWork;      // grown lazily, at most sumScatterWorkBytes (a piece is at least n items)
    // The last schedule of each kind: repeated calls of one shape (training loops, benchmarks) reuse it.
    private final LastSchedule lastAllReduce = new LastSchedule();
    private final LastSchedule lastAllGather = new LastSchedule();
    private final LastSchedule lastSumScatter = new LastSchedule();
    private final LastSchedule lastSend = new LastSchedule();
    private final LastSchedule lastRecv = new LastSchedule();
    private static final String[] REDUCE_NAMES = {"all_sum", "all_max", "all_min"};
    /** Set once every member is known to be jdist (docs/reference/collectives.md §10); null before, and for good when MLX peers may be present. */
    private volatile MeshState mesh;
    /** Why every member is jdist and yet there is no mesh: not every pair of ranks can connect (§10.1); null otherwise. */
    private volatile String unreachable;
    /**
     * The deadline of the peer mesh and, without a liveness watch, of operations between jdist members: {@code JDIST_TIMEOUT}
     * or 120 s ({@link JdistTimeout#DEFAULT}), not the 30 s set-up bound of a ring without a token; set by
     * {@link #membersAreJdist}, inherited by a split.
     */
    private volatile Duration jdistTimeout;
    /** The member probe, open from a verdict of "every member is jdist" until every member is past it (§3.13); else null. */
    private volatile MemberProbe memberProbe;
    /** How long the reachability probes may take at most (a peer that drops packets silently costs this once). */
    static final Duration PROBE_LIMIT = Duration.ofSeconds(5);

    /** The peer mesh, its transport, the algorithm policy and what the mesh algorithms reuse between calls. */
    private static final class MeshState implements AlgorithmChoice {
        final PeerMesh mesh;
        final MeshTransport transport;
        final Topology topology;
        final HostLayout layout;
        final long hostId;          // what this rank published as its host (a split's mesh publishes it again)
        final boolean tcpOnly;      // JDIST_TRANSPORT=tcp given: no shared-memory pairs even across hosts (a split keeps it)
        volatile AlgorithmPolicy policy;
        MemorySegment scratch;
        final LastMesh lastAllReduce = new LastMesh();
        final LastMesh lastAllGather = new LastMesh();
        final LastMesh lastSumScatter = new LastMesh();
        /** The operations MLX lacks over this mesh, made at first use (operations run one at a time). */
        PeerOperations peerOperations;

        MeshState(PeerMesh mesh, Topology topology, long hostId, boolean tcpOnly, AlgorithmPolicy policy) {
            this.mesh = mesh;
            this.tcpOnly = tcpOnly;
            this.transport = new MeshTransport(mesh);
            this.topology = topology;
            this.hostId = hostId;
            long[] ids = new long[mesh.size()];
            for (int q = 0; q < ids.length; q++) ids[q] = mesh.member(q).hostId();
            this.layout = HostLayout.of(ids);
            this.policy = policy;
        }

        @Override
        public Algorithm algorithmFor(CollectiveKind kind, long bytes) { return policy.choose(kind, bytes, topology); }

        @Override
        public HostLayout hostLayout() { return layout; }

        @Override
        public void useAlgorithmPolicy(AlgorithmPolicy policy) { this.policy = policy; }

        /** The scratch buffer of {@code bytes} (grown as needed, kept for later calls); null for 0. */
        MemorySegment scratch(long bytes) {
            if (bytes == 0) return null;
            if (scratch == null || scratch.byteSize() < bytes) scratch = Arena.ofAuto().allocate(bytes, 64);
            return scratch;
        }
    }

    /** The last mesh schedule of one kind, for repeated calls of one shape. */
    private static final class LastMesh {
        Algorithm algorithm;
        long a = -1;
        long b = -1;
        MeshSchedule schedule;

        MeshSchedule get(Algorithm algorithm, long a, long b, java.util.function.Supplier<MeshSchedule> make) {
            if (schedule == null || this.algorithm != algorithm || this.a != a || this.b != b) {
                schedule = make.get();
                this.algorithm = algorithm;
                this.a = a;
                this.b = b;
            }
            return schedule;
        }
    }

    private static final class LastSchedule {
        long a = -1;
        long b = -1;
        int directions = RingSchedule.BOTH_DIRECTIONS;
        List<RingSchedule.Stream> streams;

        boolean matches(long a, long b) { return matches(a, b, RingSchedule.BOTH_DIRECTIONS); }

        boolean matches(long a, long b, int directions) {
            return streams != null && this.a == a && this.b == b && this.directions == directions;
        }

        List<RingSchedule.Stream> remember(long a, long b, List<RingSchedule.Stream> streams) {
            return remember(a, b, RingSchedule.BOTH_DIRECTIONS, streams);
        }

        List<RingSchedule.Stream> remember(long a, long b, int directions, List<RingSchedule.Stream> streams) {
            this.a = a;
            this.b = b;
            this.directions = directions;
            this.streams = streams;
            return streams;
        }
    }

    /** How many directions the ring algorithm {@code a} uses (MLX's two for {@link Algorithm#RING}). */
    private static int directions(Algorithm a) {
        return a == Algorithm.RING1 ? RingSchedule.ONE_DIRECTION : RingSchedule.BOTH_DIRECTIONS;
    }

    private RingGroup(RingSettings settings, RingTransport transport) {
        this.settings = settings;
        this.rank = settings.rank();
        this.size = settings.size();
        this.k = settings.connectionsPerNeighbour();
        this.transport = transport;
        this.sumScatterWorkBytes = settings.tuning().sumScatterWorkBytes();
        this.small = size > 1 ? Arena.ofAuto().allocate(RingSchedule.SMALL_PATH_LIMIT_BYTES, 16) : null;
    }

    /** Forms the world ring described by {@code settings}: binds own addresses, connects, accepts. */
    public static RingGroup connect(RingSettings settings) {
        return connect(settings, null);
    }

    /**
     * As {@link #connect(RingSettings)} with this rank's listeners already bound, listening and non-blocking, one per own
     * address in order (a rendezvous binds them before it publishes their ports, so no other process can take a port
     * in between); null binds them here. Takes ownership of the channels: they are closed either way.
     */
    public static RingGroup connect(RingSettings settings, List<ServerSocketChannel> boundListeners) {
        RingLog log = new RingLog(settings.verbose(), "rank " + settings.rank());
        int own = settings.hostfile().addresses(settings.rank()).size();
        if (boundListeners != null && (settings.size() == 1 || boundListeners.size() != own)) {
            for (ServerSocketChannel ch : boundListeners) RingConnector.closeQuietly(ch);
            if (settings.size() > 1) {
                throw new IllegalArgumentException("rank " + settings.rank() + " was given " + boundListeners.size()
                        + " bound listeners for " + own + " own addresses");
            }
        }
        if (settings.size() == 1) {
            log.log("the hostfile lists one rank: a 1-rank group, no connections");
            return new RingGroup(settings, null);
        }
        return form(settings, boundListeners != null ? boundListeners : RingConnector.listenOnOwnAddresses(settings), log);
    }

    /**
     * Forms the ring {@code settings} describe, whose own addresses are already bound ({@code listeners}, closed
     * either way), and sets up its transport.
     */
    private static RingGroup form(RingSettings settings, List<ServerSocketChannel> listeners, RingLog log) {
        RingConnector.Connections c = new RingConnector(settings, log).connect(listeners);
        TcpTransport tcp;
        try {
            tcp = new TcpTransport(settings, c, log);
        } catch (IOException e) {
            c.closeAll();
            throw new ConnectFailedException("rank " + settings.rank() + ": cannot set up the ring's selector: " + e, e);
        }
        if (settings.transport() != RingSettings.Transport.SHM) return new RingGroup(settings, tcp);
        try {
            return new RingGroup(settings, ShmSetup.establish(tcp, settings, log));
        } catch (RuntimeException | Error e) {
            tcp.close();
            throw e;
        }
    }

    @Override
    public int rank() { return rank; }

    @Override
    public int size() { return size; }

    /** Connections per neighbour. */
    public int connectionsPerNeighbour() { return k; }

    @Override
    public String backendName() { return "ring"; }

    /** {@code "shm"} when this group's bytes move through shared memory ({@code JDIST_TRANSPORT=shm}), else {@code "tcp"}. */
    public String transportName() { return transport instanceof ShmTransport ? "shm" : "tcp"; }

    // ------------------------------------------------------------------ collectives

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        if (size == 1) {
            copy(in.segment(), out.segment());
            return;
        }
        String name = switch (op) {
            case SUM -> REDUCE_NAMES[0];
            case MAX -> REDUCE_NAMES[1];
            case MIN -> REDUCE_NAMES[2];
        };
        transport.checkUsable(name);
        DType dtype = in.dtype();
        int s = dtype.itemSize();
        long e = in.size();
        MeshState m = mesh;
        Algorithm algorithm = m == null ? Algorithm.RING : m.policy.choose(CollectiveKind.ALL_REDUCE, in.nbytes(), m.topology);
        if (!algorithm.onRing()) {
            copy(in.segment(), out.segment());
            MeshSchedule schedule = m.lastAllReduce.get(algorithm, e, s, () -> MeshAlgorithms.allReduce(algorithm, m.layout, rank, e, s));
            runMesh(m, name + " (" + algorithm.description() + ")", schedule, out.segment(), op, dtype);
            return;
        }
        int directions = directions(algorithm);
        List<RingSchedule.Stream> streams = lastAllReduce.matches(e, s, directions) ? lastAllReduce.streams
                : lastAllReduce.remember(e, s, directions, RingSchedule.allReduce(rank, size, k, directions, e, s));
        if (RingSchedule.isSmallPath(e, size)) {
            MemorySegment w = small.asSlice(0, (long) size * s);
            w.fill((byte) 0);
            MemorySegment.copy(in.segment(), 0, w, 0, e * s);
            runRing(Transfer.reduce(name, streams, w, op, dtype));
            MemorySegment.copy(w, 0, out.segment(), 0, e * s);
        } else {
            // out starts as a copy of in: the transport copies, or reads in where the schedule first touches each byte
            runRing(Transfer.reduceFrom(name, streams, out.segment(), in.segment(), op, dtype));
        }
    }

    @Override
    public void allGather(Array in, Array out) {
        long bytes = in.nbytes();
        if (size == 1) {
            copy(in.segment(), out.segment());
            return;
        }
        transport.checkUsable("all_gather");
        MemorySegment.copy(in.segment(), 0, out.segment(), rank * bytes, bytes);
        MeshState m = mesh;
        Algorithm algorithm = m == null ? Algorithm.RING : m.policy.choose(CollectiveKind.ALL_GATHER, out.nbytes(), m.topology);
        if (!algorithm.onRing()) {
            MeshSchedule schedule = m.lastAllGather.get(algorithm, bytes, 0, () -> MeshAlgorithms.allGather(algorithm, m.layout, rank, bytes));
            runMesh(m, "all_gather (" + algorithm.description() + ")", schedule, out.segment(), null, null);
            return;
        }
        int directions = directions(algorithm);
        List<RingSchedule.Stream> streams = lastAllGather.matches(bytes, 0, directions) ? lastAllGather.streams
                : lastAllGather.remember(bytes, 0, directions, RingSchedule.allGather(rank, size, k, directions, bytes));
        runRing(Transfer.of("all_gather", streams, out.segment()));
    }

    @Override
    public void sumScatter(Array in, Array out) {
        if (size == 1) {
            copy(in.segment(), out.segment());
            return;
        }
        transport.checkUsable("sum_scatter");
        DType dtype = in.dtype();
        int s = dtype.itemSize();
        long chunk = out.size();
        // The reduce-scatter combines into every chunk, so it runs on a copy of the input, in pieces that
        // fit the group's bounded work buffer: piece [lo, lo+m) of every rank's chunk, side by side. Every
        // rank cuts the same pieces (sum_scatter is a jdist extension; no MLX peer expects one pass).
        long pieceElements = Math.max(1, sumScatterWorkBytes / ((long) size * s));
        MeshState ms = mesh;
        Algorithm algorithm = ms == null ? Algorithm.RING : ms.policy.choose(CollectiveKind.SUM_SCATTER, in.nbytes(), ms.topology);
        if (!algorithm.onRing()) {
            for (long lo = 0; lo < chunk; lo += pieceElements) {
                long m = Math.min(pieceElements, chunk - lo);
                long pieceBytes = m * s;
                MemorySegment work = sumScatterWork(size * pieceBytes);
                for (int c = 0; c < size; c++) MemorySegment.copy(in.segment(), (c * chunk + lo) * s, work, c * pieceBytes, pieceBytes);
                MeshSchedule schedule = ms.lastSumScatter.get(algorithm, pieceBytes, 0,
                        () -> MeshAlgorithms.sumScatter(algorithm, ms.layout, rank, pieceBytes));
                runMesh(ms, "sum_scatter (" + algorithm.description() + ")", schedule, work, ReduceOp.SUM, dtype);
                MemorySegment.copy(work, rank * pieceBytes, out.segment(), lo * s, pieceBytes);
            }
            return;
        }
        int directions = directions(algorithm);
        for (long lo = 0; lo < chunk; lo += pieceElements) {
            long m = Math.min(pieceElements, chunk - lo);
            MemorySegment work = sumScatterWork((long) size * m * s);
            List<RingSchedule.Stream> streams = lastSumScatter.matches(m, s, directions) ? lastSumScatter.streams
                    : lastSumScatter.remember(m, s, directions, RingSchedule.sumScatter(rank, size, k, directions, m, s));
            // work block c = piece [lo, lo+m) of chunk c: read from the input where the schedule first needs it
            runRing(Transfer.reduceFromBlocks("sum_scatter", streams, work, in.segment(), m * s, chunk * s, lo * s,
                    ReduceOp.SUM, dtype));
            MemorySegment.copy(work, rank * m * s, out.segment(), lo * s, m * s);
        }
    }

    /** A slice of the group's sum_scatter work buffer (allocated once, grown up to its bound). */
    private MemorySegment sumScatterWork(long bytes) {
        if (sumScatterWork == null || sumScatterWork.byteSize() < bytes) {
            long cap = Math.max(bytes, Math.min(sumScatterWorkBytes, 2 * bytes));
            sumScatterWork = Arena.ofAuto().allocate(cap, 64);
        }
        return sumScatterWork.asSlice(0, bytes);
    }

    /**
     * Between jdist ranks (a peer mesh exists) every send and recv goes over the mesh's direct connection to the peer,
     * whichever rank it is, so single calls and batches share one ordered stream per pair (docs/reference/collectives.md §13.6); otherwise over
     * the ring to a neighbour, with MLX's bytes.
     */
    @Override
    public void send(Array x, int dst) {
        if (size == 1) throw new IllegalArgumentException("cannot send to a singleton group");
        MeshState m = mesh;
        if (m != null) {
            peerOperations(m).send(x, dst);
            return;
        }
        pointToPoint("send to rank " + dst, lastSend, x, dst, true);
    }

    @Override
    public void recv(Array out, int src) {
        if (size == 1) throw new IllegalArgumentException("cannot recv from a singleton group");
        MeshState m = mesh;
        if (m != null) {
            peerOperations(m).recv(out, src);
            return;
        }
        pointToPoint("recv from rank " + src, lastRecv, out, src, false);
    }

    // ------------------------------------------------------------------ the operations MLX lacks (jdist members only, docs/reference/collectives.md §13)

    /** The ring's bytes are MLX's: with MLX peers possible only what MLX has runs. */
    @Override
    public boolean mlxWire() { return true; }

    @Override
    public String beyondMlxPointToPoint(int peer) {
        int left = Math.floorMod(rank - 1, size), right = (rank + 1) % size;
        if (peer == left || peer == right) return null;
        return "the ring sends only to a neighbour: ranks " + left + " (left) and " + right + " (right) of " + size;
    }

    @Override
    public String jdistReachLimited() {
        String why = unreachable;
        return why == null ? null : "it needs direct connections between the ranks, and in this group " + why + " (a ring "
                + "of cables, such as Thunderbolt, links only neighbours). Give every host a first hostfile address that every "
                + "other host reaches, or keep to all_sum, all_max, all_min, all_gather, sum_scatter and send/recv between "
                + "neighbours";
    }

    /** The peer mesh, which every operation MLX lacks runs over; Group lets them through only for jdist members. */
    private MeshState meshFor(String op) {
        MeshState m = mesh;
        if (m == null && unreachable != null) {   // Group refuses first (jdistReachLimited); this is the backend's own guard
            throw new dev.jdist.UnsupportedCollectiveException("rank " + rank + ": " + op + " is not supported here: " + jdistReachLimited());
        }
        if (m == null) {
            throw new dev.jdist.UnsupportedCollectiveException(op + " is not supported with MLX peers in the group: the ring "
                    + "runs it only between jdist ranks (set JDIST_JOB_TOKEN, or start the job with jdist launch)");
        }
        return m;
    }

    @Override
    public void broadcast(Array buffer, int root) {
        peerOperations(meshFor("broadcast")).broadcast(buffer, root);
    }

    @Override
    public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        peerOperations(meshFor("all_to_all")).allToAllV(in, sendCounts, out, recvCounts);
    }

    @Override
    public void gather(Array in, Array out, int root) {
        peerOperations(meshFor("gather")).gather(in, out, root);
    }

    @Override
    public void scatter(Array in, Array out, int root) {
        peerOperations(meshFor("scatter")).scatter(in, out, root);
    }

    @Override
    public void batchSendRecv(List<dev.jdist.PeerOp> ops) {
        peerOperations(meshFor("batched send/recv")).batchSendRecv(ops);
    }

    /** The operations MLX lacks over the mesh: every rank is reached directly (docs/reference/collectives.md §13.7). */
    private PeerOperations peerOperations(MeshState m) {
        PeerOperations p = m.peerOperations;
        if (p == null) {
            m.peerOperations = p = new PeerOperations(rank, size, PeerOperations.Reach.EVERY_RANK, (opName, schedule, work, input) ->
                    runMesh(m, opName, schedule, work, input), null, null);
        }
        return p;
    }

    private void pointToPoint(String opName, LastSchedule last, Array x, int peer, boolean sending) {
        List<RingSchedule.Stream> streams = last.matches(x.nbytes(), peer) ? last.streams
                : last.remember(x.nbytes(), peer, RingSchedule.pointToPoint(rank, size, k, x.nbytes(), peer, sending));
        runRing(Transfer.of(opName, streams, x.segment()));
    }

    /** A ring operation; a failure also breaks the mesh, so that members waiting on this one over it fail too. */
    private void runRing(Transfer t) {
        try {
            transport.run(t);
        } catch (RuntimeException | Error e) {
            MeshState m = mesh;
            if (m != null) {
                m.mesh.breakWith(e instanceof DistributedException de ? de
                        : new PeerLostException("rank " + rank + ": " + t.opName() + " failed unexpectedly (" + e + ")", e));
            }
            throw e;
        }
    }

    /** A mesh operation that only moves data: {@code work} receives, {@code input} (or null) is sent from. */
    private void runMesh(MeshState m, String opName, MeshSchedule schedule, MemorySegment work, MemorySegment input) {
        transport.checkUsable(opName);
        runMesh(m, opName, schedule, work, input, null, null);
    }

    private void runMesh(MeshState m, String opName, MeshSchedule schedule, MemorySegment work, ReduceOp op, DType dtype) {
        runMesh(m, opName, schedule, work, null, op, dtype);
    }

    /** A mesh operation; a failure also breaks the ring, so that the neighbours fail too. */
    private void runMesh(MeshState m, String opName, MeshSchedule schedule, MemorySegment work, MemorySegment input, ReduceOp op,
                         DType dtype) {
        try {
            m.transport.run(opName, schedule, work, m.scratch(schedule.scratchBytes()), input, op, dtype);
        } catch (RuntimeException | Error e) {
            DistributedException cause = m.mesh.broken();
            if (cause != null) transport.breakGroup(cause);
            throw e;
        }
    }

    private static void copy(MemorySegment from, MemorySegment to) {
        if (from.address() != to.address()) MemorySegment.copy(from, 0, to, 0, from.byteSize());
    }

    // ------------------------------------------------------------------ split (jdist extension, docs/reference/collectives.md §9)

    /** Bytes per member in the split exchange: colour, key, IPv4 and k ports. */
    private int splitRecordBytes() { return 4 + 4 + 4 + 4 * k; }

    /**
     * jdist's ring split: every member opens k listeners on its own host (port 0), the members
     * all-gather (colour, key, address, ports) over this ring, and each colour's members, ordered by
     * key then parent rank, form a new ring with their own connections. This group stays usable.
     */
    @Override
    public GroupImpl split(int color, int key) {
        if (size == 1) return new RingGroup(settings, null);
        transport.checkUsable("split");
        List<ServerSocketChannel> listeners = new ArrayList<>();
        try {
            InetAddress ip = settings.hostfile().addresses(rank).getFirst().socketAddress().getAddress();
            String host = ip.getHostAddress();
            for (int j = 0; j < k; j++) {
                listeners.add(RingConnector.listen(new InetSocketAddress(ip, 0), host + ":0",
                        "rank " + rank + " (split listener " + j + ")"));
            }
            int rec = splitRecordBytes();
            ByteBuffer mine = ByteBuffer.allocate(rec).order(ByteOrder.LITTLE_ENDIAN);
            mine.putInt(color).putInt(key).put(((Inet4Address) ip).getAddress());
            for (ServerSocketChannel l : listeners) mine.putInt(((InetSocketAddress) l.getLocalAddress()).getPort());
            Array in = Array.fromBytes(DType.UINT8, mine.array(), rec);
            Array all = Array.zeros(DType.UINT8, rec * size);
            allGather(in, all);

            record Member(int parentRank, int key, List<RingHostfile.Address> addresses) {}
            List<Member> members = new ArrayList<>();
            ByteBuffer b = all.segment().asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            for (int q = 0; q < size; q++) {
                if (b.getInt(q * rec) != color) continue;
                byte[] a = new byte[4];
                b.get(q * rec + 8, a);
                InetAddress memberIp = InetAddress.getByAddress(a);
                List<RingHostfile.Address> addresses = new ArrayList<>();
                for (int j = 0; j < k; j++) {
                    int port = b.getInt(q * rec + 12 + 4 * j);
                    addresses.add(new RingHostfile.Address(memberIp.getHostAddress() + ":" + port, memberIp.getHostAddress(),
                            port, new InetSocketAddress(memberIp, port)));
                }
                members.add(new Member(q, b.getInt(q * rec + 4), List.copyOf(addresses)));
            }
            members.sort(Comparator.comparingInt(Member::key).thenComparingInt(Member::parentRank));
            int newRank = -1;
            for (int i = 0; i < members.size(); i++) if (members.get(i).parentRank() == rank) newRank = i;
            // the sub-ring's settings: this group's, for the members' addresses (their fresh listeners) in their new order
            RingSettings sub = settings.forRing(newRank,
                    new RingHostfile(null, members.stream().map(Member::addresses).toList()));
            if (sub.size() == 1) return new RingGroup(sub, null);
            String who = "rank " + rank + " -> split colour " + color + " rank " + newRank;
            RingGroup child = form(sub, listeners, new RingLog(settings.verbose(), who));
            // the part waits as the whole does (MLX peers possible: 30 min; jdist members: JDIST_TIMEOUT or 120 s until
            // the watch sets its own)
            if (child.transport instanceof RingTransportBase t) t.useProgressDeadline(progressDeadline());
            child.jdistTimeout = jdistTimeout;
            MeshState m = mesh;
            child.unreachable = unreachable;   // no mesh here, none in a part of it
            if (m != null) {
                // the members of a jdist group are jdist: the sub-ring gets its own mesh, with the parent's policy
                try {
                    child.formMesh(m.policy, m.hostId, m.tcpOnly, who, false);   // a part of a mesh whose pairs all connect
                } catch (RuntimeException | Error e) {
                    child.close();
                    throw e;
                }
            }
            return child;
        } catch (IOException e) {
            throw new ConnectFailedException("rank " + rank + ": split(" + color + ", " + key + ") failed: " + e, e);
        } finally {
            for (ServerSocketChannel l : listeners) RingConnector.closeQuietly(l);
        }
    }

    // ------------------------------------------------------------------ between jdist ranks (docs/reference/collectives.md §10)

    /**
     * Every member is jdist: forms the peer mesh (an all-gather of each member's mesh address over this ring) and from
     * now on chooses each collective's algorithm by {@code JDIST_ALGO}, {@code JDIST_ALGO_RULES} and jdist's defaults.
     */
    @Override
    public void membersAreJdist(JobTable table, Map<String, String> env) {
        closeMemberProbe();   // the agreement's exchange over the ring completed: every member is past the probe
        if (size == 1 || mesh != null) return;
        // JDIST_TIMEOUT when given here; else the ring's own deadline, unless that is only the set-up bound of a ring
        // without a token (the ring may have been given its deadline otherwise: a test's or a caller's settings)
        String given = env.get(JdistTimeout.VARIABLE);
        jdistTimeout = given != null && !given.isBlank() ? JdistTimeout.parse(given)
                : settings.timeout().equals(JdistTimeout.MLX_SETUP_DEFAULT) ? JdistTimeout.DEFAULT : settings.timeout();
        if (transport instanceof RingTransportBase t) t.useProgressDeadline(jdistTimeout);   // the watch, if it runs, sets 30 min
        // JDIST_TRANSPORT=tcp named (not merely the default): the mesh's pairs stay on TCP even across hosts
        String transportText = env.get(RingSettings.TRANSPORT);
        boolean tcpOnly = transportText != null && !transportText.isBlank()
                && RingSettings.parseTransport(transportText) == RingSettings.Transport.TCP;
        formMesh(AlgorithmPolicy.fromEnvironment(env), hostId(env), tcpOnly, "rank " + rank, true);
    }

    /** A ring's members are asked over UDP on the ring's own ports, which MLX never uses (§3.13), unless {@code JDIST_MEMBER_PROBE=off}. */
    @Override
    public boolean canProbeMembers() { return size > 1; }

    @Override
    public String probeMembers(Map<String, String> env) {
        String v = env.get(MemberProbe.VARIABLE);
        if (v != null && v.strip().equalsIgnoreCase("off")) return MemberProbe.VARIABLE + "=off";
        if (v != null && !v.isBlank() && !v.strip().equalsIgnoreCase("on")) {
            throw new dev.jdist.ConfigException(MemberProbe.VARIABLE + "=\"" + v + "\" is neither on nor off: on (the default) asks "
                    + "whether every rank is jdist over UDP on the ring's ports; off always runs the ring as MLX's");
        }
        MemberProbe.Verdict verdict = MemberProbe.run(rank, settings.hostfile());
        memberProbe = verdict.probe();
        return verdict.whyNot();
    }

    /**
     * MLX peers may be present: MLX's ring at every size, and once connected, operations wait for progress as long as an MLX
     * job would let them ({@code JDIST_TIMEOUT}, else 30 minutes); a killed peer still ends the wait at once.
     */
    @Override
    public void mayHoldMlxPeers(Map<String, String> env) {
        closeMemberProbe();
        if (size == 1) return;
        RingBackend.warnIfAlgorithmsAsked(env);
        if (transport instanceof RingTransportBase t) t.useProgressDeadline(JdistTimeout.watchedProgress(env.get(JdistTimeout.VARIABLE)));
    }

    /** The progress deadline of an operation now (tests, docs: what a group reports). */
    public Duration progressDeadline() {
        return transport instanceof RingTransportBase t ? Duration.ofNanos(t.timeoutNanos) : settings.timeout();
    }

    private void closeMemberProbe() {
        MemberProbe p = memberProbe;
        memberProbe = null;
        if (p != null) p.close();
    }

    /**
     * This rank's host identity for the hierarchy (docs/reference/collectives.md §10.11): {@code JDIST_HOST_ID} when set (ranks on
     * one machine that should act as separate hosts: tests, containers sharing a kernel), else the kernel's boot id.
     */
    static long hostId(Map<String, String> env) {
        String forced = env.get(HOST_ID_VARIABLE);
        if (forced == null || forced.isBlank()) return PeerMesh.thisHostId();
        return PeerMesh.hostIdOf("set:" + forced.strip());
    }

    /** Overrides the host identity the hierarchical algorithms group ranks by. */
    public static final String HOST_ID_VARIABLE = "JDIST_HOST_ID";

    /**
     * Binds the mesh listener on this rank's ring address, exchanges the records over the ring, forms the mesh; with
     * {@code probe}, first checks that every pair of members can connect (§10.1) and otherwise keeps to the ring.
     */
    private void formMesh(AlgorithmPolicy policy, long hostId, boolean tcpOnly, String who, boolean probe) {
        transport.checkUsable("forming the peer mesh");
        InetAddress ip = settings.hostfile().addresses(rank).getFirst().socketAddress().getAddress();
        ServerSocketChannel listener = PeerMesh.listen(ip, "rank " + rank, size);
        // Pairs on one host use shared memory over a shared-memory ring, and, unless JDIST_TRANSPORT=tcp, in a job across
        // several hosts (the hierarchy's step inside a host); every member must choose alike, so the choice rides in the
        // settings digest beside the algorithm policy.
        boolean shmRing = transport instanceof ShmTransport;
        boolean shmAcrossHosts = !shmRing && !tcpOnly;
        PeerMesh m;
        try {
            byte[] mine = PeerMesh.record(listener, hostId, meshSettingsDigest(policy, shmAcrossHosts));
            Array all = Array.zeros(DType.UINT8, PeerMesh.RECORD_BYTES * size);
            allGather(Array.fromBytes(DType.UINT8, mine, mine.length), all);
            m = PeerMesh.form(new PeerMesh.Settings(rank, jdistTimeout != null ? jdistTimeout : settings.timeout(), settings.jobToken(), settings.spinMicros(),
                    settings.verbose(), who, RingAuthenticator::new,
                    shmRing || shmAcrossHosts ? settings.shmLinkBytes() : 0, shmAcrossHosts), listener, all.toBytes(),
                    AlgorithmPolicy.VARIABLE + ", " + AlgorithmPolicy.RULES_VARIABLE + " and " + RingSettings.TRANSPORT
                            + " settings, or from jdist builds whose default rules differ (another jdist version on some hosts)");
        } catch (RuntimeException | Error e) {
            RingConnector.closeQuietly(listener);
            throw e;
        }
        MeshReach reach = null;
        try {
            if (probe) reach = agreeOnReach(m);
        } catch (RuntimeException | Error e) {
            m.close();
            throw e;
        }
        if (reach != null && !reach.complete()) {
            unreachable = reach.describe(m);
            m.close();
            if (rank == 0) {
                System.err.println("jdist: rank 0: " + unreachable + ". So this "
                        + "group runs the ring, over each rank's connections to its two neighbours, at every size: jdist's "
                        + "size-aware algorithms (" + AlgorithmPolicy.VARIABLE + ", rules files) and broadcast, all_to_all, "
                        + "gather, scatter and batched send/recv need direct connections. Expected on a ring of cables "
                        + "(Thunderbolt); otherwise check the routes and firewalls between the hosts' first hostfile addresses");
            }
            return;
        }
        mesh = new MeshState(m, new Topology(size, m.hosts(), shmRing), hostId, tcpOnly, policy);
    }

    /**
     * Every member probes the members it would connect to (§10.1) and the outcomes are all-gathered over the ring, so
     * that every member reaches the same verdict. Members all on one host reach each other and skip it.
     */
    private MeshReach agreeOnReach(PeerMesh m) {
        if (m.hosts() == 1) return new MeshReach(size, new byte[size * size]);
        Duration limit = settings.timeout().compareTo(PROBE_LIMIT) < 0 ? settings.timeout() : PROBE_LIMIT;
        byte[] mine = m.probe(limit);
        Array all = Array.zeros(DType.UINT8, size * size);
        allGather(Array.fromBytes(DType.UINT8, mine, mine.length), all);
        return new MeshReach(size, all.toBytes());
    }

    /** The policy's digest, told apart when same-host pairs across several hosts use shared memory. */
    private static byte[] meshSettingsDigest(AlgorithmPolicy policy, boolean shmAcrossHosts) {
        byte[] digest = policy.digest();
        if (shmAcrossHosts) digest[0] ^= 0x5A;
        return digest;
    }

    /** jdist-internal: the peer mesh, once every member is known to be jdist (for operations that need any peer). */
    public Optional<PeerMesh> peerMesh() {
        MeshState m = mesh;
        return m == null ? Optional.empty() : Optional.of(m.mesh);
    }

    /** jdist-internal: the transport that runs schedules over {@link #peerMesh()}. */
    public Optional<MeshTransport> meshTransport() {
        MeshState m = mesh;
        return m == null ? Optional.empty() : Optional.of(m.transport);
    }

    /** jdist-internal: which members share a host, as the mesh's members published it; empty without a mesh. */
    public Optional<HostLayout> hostLayout() {
        MeshState m = mesh;
        return m == null ? Optional.empty() : Optional.of(m.layout);
    }

    /** The algorithm the next {@code kind} of {@code bytes} (counted as {@link CollectiveKind} says) will use. */
    public Algorithm algorithmFor(CollectiveKind kind, long bytes) {
        MeshState m = mesh;
        return m == null ? Algorithm.RING : m.algorithmFor(kind, bytes);
    }

    /** With the peer mesh: the mesh's choice of algorithm (jdist bench); without, the ring at every size. */
    @Override
    public Optional<AlgorithmChoice> algorithmChoice() { return Optional.ofNullable(mesh); }

    /**
     * jdist-internal ({@code jdist bench --tune}): replaces the algorithm policy. Every member must call it with the same
     * policy between the same two operations. Throws when the group has no mesh (MLX peers may be present).
     */
    public void useAlgorithmPolicy(AlgorithmPolicy policy) {
        MeshState m = mesh;
        if (m == null) {
            throw new IllegalStateException("rank " + rank + ": this ring group may have MLX peers (no job token and no "
                    + "rendezvous), so it runs MLX's ring and cannot choose algorithms");
        }
        m.useAlgorithmPolicy(policy);
    }

    /** Every member is jdist: the job's liveness watch ends a waiting operation and sets the progress deadline (docs/reference/collectives.md §11). */
    @Override
    public void useLiveness(Liveness liveness) {
        if (transport instanceof RingTransportBase t) t.useLiveness(liveness);
        MeshState m = mesh;
        if (m != null) m.mesh.useLiveness(liveness);
    }

    @Override
    public void close() {
        closeMemberProbe();
        MeshState m = mesh;
        if (m != null) m.mesh.close();
        if (transport != null) transport.close();
    }
}
