package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.ConnectFailedException;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;

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

/**
 * A ring group (spec collectives.md §3): this rank's connections to its two neighbours and the
 * operations over them. Schedules come from {@link RingSchedule}, bytes move in {@link RingEngine}.
 * A 1-rank ring (hostfile with one entry) has no sockets; {@link dev.jdist.Group} turns its
 * collectives into identities.
 */
public final class RingGroup implements GroupImpl {

    private final int rank;
    private final int size;
    private final int k;
    private final RingTransport engine;        // null when size == 1; RingEngine (tcp) or ShmEngine (shm)
    private final String host;                 // this rank's IPv4 host, for split listeners
    private final Duration timeout;
    private final String jobToken;
    private final boolean verbose;
    private final long spinNanos;
    private final RingSettings.Transport transport;
    private final long shmLinkBytes;
    private final MemorySegment small;         // the small path's padded work vector W (n * itemsize <= 1024)
    /** Bound of the sum_scatter work buffer; with the engine's 16 MiB of scratch the group's own buffers stay within 32 MiB. */
    static final long SUM_SCATTER_WORK_BYTES = 16L << 20;
    /** {@link #SUM_SCATTER_WORK_BYTES} except in tests that exercise the piecing. */
    static volatile long sumScatterWorkBytes = SUM_SCATTER_WORK_BYTES;
    private MemorySegment sumScatterWork;      // grown lazily, at most SUM_SCATTER_WORK_BYTES (a piece is at least n items)
    // The last schedule of each kind: repeated calls of one shape (training loops, benchmarks) reuse it.
    private final LastSchedule lastAllReduce = new LastSchedule();
    private final LastSchedule lastAllGather = new LastSchedule();
    private final LastSchedule lastSumScatter = new LastSchedule();
    private final LastSchedule lastSend = new LastSchedule();
    private final LastSchedule lastRecv = new LastSchedule();
    private static final String[] REDUCE_NAMES = {"all_sum", "all_max", "all_min"};

    private static final class LastSchedule {
        long a = -1;
        long b = -1;
        List<RingSchedule.Stream> streams;

        boolean matches(long a, long b) { return streams != null && this.a == a && this.b == b; }

        List<RingSchedule.Stream> remember(long a, long b, List<RingSchedule.Stream> streams) {
            this.a = a;
            this.b = b;
            this.streams = streams;
            return streams;
        }
    }

    private RingGroup(int rank, int size, int k, RingTransport engine, String host, Duration timeout, String jobToken,
                      boolean verbose, long spinNanos, RingSettings.Transport transport, long shmLinkBytes) {
        this.spinNanos = spinNanos;
        this.transport = transport;
        this.shmLinkBytes = shmLinkBytes;
        this.rank = rank;
        this.size = size;
        this.k = k;
        this.engine = engine;
        this.host = host;
        this.timeout = timeout;
        this.jobToken = jobToken;
        this.verbose = verbose;
        this.small = size > 1 ? Arena.ofAuto().allocate(RingSchedule.SMALL_PATH_LIMIT_BYTES, 16) : null;
    }

    /** Forms the world ring described by {@code settings}: binds own addresses, connects, accepts. */
    public static RingGroup connect(RingSettings settings) {
        return connect(settings, null);
    }

    /**
     * As {@link #connect(RingSettings)} with this rank's listeners already bound, listening and non-blocking, one per own address
     * in order (a rendezvous binds them before it publishes their ports, so no other process can take a port in
     * between); null binds them here. Takes ownership of the channels: they are closed either way.
     */
    public static RingGroup connect(RingSettings settings, List<ServerSocketChannel> boundListeners) {
        RingHostfile hf = settings.hostfile();
        int n = hf.size();
        int r = settings.rank();
        RingLog log = new RingLog(settings.verbose(), "rank " + r);
        List<RingHostfile.Address> own = hf.addresses(r);
        if (boundListeners != null && (n == 1 || boundListeners.size() != own.size())) {
            for (ServerSocketChannel ch : boundListeners) RingConnector.closeQuietly(ch);
            if (n > 1) {
                throw new IllegalArgumentException("rank " + r + " was given " + boundListeners.size() + " bound listeners for "
                        + own.size() + " own addresses");
            }
        }
        if (n == 1) {
            log.log("the hostfile lists one rank: a 1-rank group, no connections");
            return new RingGroup(0, 1, own.size(), null, own.getFirst().socketAddress().getAddress().getHostAddress(),
                    settings.timeout(), settings.jobToken(), settings.verbose(), settings.spinMicros() * 1000,
                    settings.transport(), settings.shmLinkBytes());
        }
        int right = (r + 1) % n;
        int left = (r - 1 + n) % n;
        List<RingHostfile.Address> theirs = hf.addresses(right);
        List<RingConnector.Listener> listeners = new ArrayList<>();
        try {
            for (int j = 0; j < own.size(); j++) {
                RingHostfile.Address a = own.get(j);
                listeners.add(new RingConnector.Listener(j, a.text(), boundListeners != null ? boundListeners.get(j)
                        : RingConnector.listen(a.socketAddress(), a.text(), "rank " + r + " (address " + j + " of its entry in "
                        + hf.path() + ")")));
            }
        } catch (RuntimeException e) {
            for (RingConnector.Listener l : listeners) RingConnector.closeQuietly(l.channel());
            if (boundListeners != null) for (ServerSocketChannel ch : boundListeners) RingConnector.closeQuietly(ch);
            throw e;
        }
        List<RingConnector.Target> targets = new ArrayList<>();
        for (int j = 0; j < theirs.size(); j++) {
            targets.add(new RingConnector.Target(j, theirs.get(j).text(), theirs.get(j).socketAddress()));
        }
        RingConnector.Connections c = new RingConnector(r, left, right, log, settings.jobToken())
                .connect(listeners, targets, settings.timeout());
        List<String> ownTexts = own.stream().map(RingHostfile.Address::text).toList();
        List<String> theirTexts = theirs.stream().map(RingHostfile.Address::text).toList();
        return fromConnections(r, n, left, right, c, ownTexts, theirTexts,
                own.getFirst().socketAddress().getAddress().getHostAddress(), settings.timeout(), settings.jobToken(), log,
                settings.verbose(), settings.spinMicros() * 1000, settings.transport(), settings.shmLinkBytes());
    }

    private static RingGroup fromConnections(int r, int n, int left, int right, RingConnector.Connections c,
                                             List<String> ownTexts, List<String> theirTexts, String host, Duration timeout,
                                             String token, RingLog log, boolean verbose, long spinNanos,
                                             RingSettings.Transport transport, long shmLinkBytes) {
        try {
            RingEngine engine = new RingEngine(r, left, right, c.left(), c.right(), ownTexts, theirTexts, timeout.toNanos(),
                    RingConnector.seconds(timeout), log, spinNanos);
            RingTransport t = engine;
            if (transport == RingSettings.Transport.SHM) {
                try {
                    t = ShmSetup.establish(engine, n, shmLinkBytes, timeout.toNanos(), RingConnector.seconds(timeout), log);
                } catch (RuntimeException | Error e) {
                    engine.close();
                    throw e;
                }
            }
            return new RingGroup(r, n, c.left().length, t, host, timeout, token, verbose, spinNanos, transport, shmLinkBytes);
        } catch (IOException e) {
            for (var ch : c.left()) RingConnector.closeQuietly(ch);
            for (var ch : c.right()) RingConnector.closeQuietly(ch);
            throw new ConnectFailedException("rank " + r + ": cannot set up the ring's selector: " + e, e);
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
    public String transportName() { return engine instanceof ShmEngine ? "shm" : "tcp"; }

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
        engine.checkUsable(name);
        DType dtype = in.dtype();
        int s = dtype.itemSize();
        long e = in.size();
        List<RingSchedule.Stream> streams = lastAllReduce.matches(e, s) ? lastAllReduce.streams
                : lastAllReduce.remember(e, s, RingSchedule.allReduce(rank, size, k, e, s));
        if (RingSchedule.isSmallPath(e, size)) {
            MemorySegment w = small.asSlice(0, (long) size * s);
            w.fill((byte) 0);
            MemorySegment.copy(in.segment(), 0, w, 0, e * s);
            engine.run(name, streams, w, op, dtype);
            MemorySegment.copy(w, 0, out.segment(), 0, e * s);
        } else {
            // out starts as a copy of in: the transport copies, or reads in where the schedule first touches each byte
            engine.runFromSource(name, streams, out.segment(), in.segment(), op, dtype);
        }
    }

    @Override
    public void allGather(Array in, Array out) {
        long bytes = in.nbytes();
        if (size == 1) {
            copy(in.segment(), out.segment());
            return;
        }
        engine.checkUsable("all_gather");
        MemorySegment.copy(in.segment(), 0, out.segment(), rank * bytes, bytes);
        List<RingSchedule.Stream> streams = lastAllGather.matches(bytes, 0) ? lastAllGather.streams
                : lastAllGather.remember(bytes, 0, RingSchedule.allGather(rank, size, k, bytes));
        engine.run("all_gather", streams, out.segment(), null, null);
    }

    @Override
    public void sumScatter(Array in, Array out) {
        if (size == 1) {
            copy(in.segment(), out.segment());
            return;
        }
        engine.checkUsable("sum_scatter");
        DType dtype = in.dtype();
        int s = dtype.itemSize();
        long chunk = out.size();
        // The reduce-scatter combines into every chunk, so it runs on a copy of the input, in pieces that
        // fit the group's bounded work buffer: piece [lo, lo+m) of every rank's chunk, side by side. Every
        // rank cuts the same pieces (sum_scatter is a jdist extension; no MLX peer expects one pass).
        long pieceElements = Math.max(1, sumScatterWorkBytes / ((long) size * s));
        for (long lo = 0; lo < chunk; lo += pieceElements) {
            long m = Math.min(pieceElements, chunk - lo);
            MemorySegment work = sumScatterWork((long) size * m * s);
            List<RingSchedule.Stream> streams = lastSumScatter.matches(m, s) ? lastSumScatter.streams
                    : lastSumScatter.remember(m, s, RingSchedule.sumScatter(rank, size, k, m, s));
            // work block c = piece [lo, lo+m) of chunk c: read from the input where the schedule first needs it
            engine.runFromSource("sum_scatter", streams, work, in.segment(), m * s, chunk * s, lo * s, ReduceOp.SUM, dtype);
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

    @Override
    public void send(Array x, int dst) {
        if (size == 1) throw new IllegalArgumentException("cannot send to a singleton group");
        List<RingSchedule.Stream> streams = lastSend.matches(x.nbytes(), dst) ? lastSend.streams
                : lastSend.remember(x.nbytes(), dst, RingSchedule.pointToPoint(rank, size, k, x.nbytes(), dst, true));
        engine.run("send to rank " + dst, streams, x.segment(), null, null);
    }

    @Override
    public void recv(Array out, int src) {
        if (size == 1) throw new IllegalArgumentException("cannot recv from a singleton group");
        List<RingSchedule.Stream> streams = lastRecv.matches(out.nbytes(), src) ? lastRecv.streams
                : lastRecv.remember(out.nbytes(), src, RingSchedule.pointToPoint(rank, size, k, out.nbytes(), src, false));
        engine.run("recv from rank " + src, streams, out.segment(), null, null);
    }

    private static void copy(MemorySegment from, MemorySegment to) {
        if (from.address() != to.address()) MemorySegment.copy(from, 0, to, 0, from.byteSize());
    }

    // ------------------------------------------------------------------ split (jdist extension, spec §9)

    /** Bytes per member in the split exchange: colour, key, IPv4 and k ports. */
    private int splitRecordBytes() { return 4 + 4 + 4 + 4 * k; }

    /**
     * jdist's ring split: every member opens k listeners on its own host (port 0), the members
     * all-gather (colour, key, address, ports) over this ring, and each colour's members, ordered by
     * key then parent rank, form a new ring with their own connections. This group stays usable.
     */
    @Override
    public GroupImpl split(int color, int key) {
        if (size == 1) {
            return new RingGroup(0, 1, k, null, host, timeout, jobToken, verbose, spinNanos, transport, shmLinkBytes);
        }
        engine.checkUsable("split");
        List<ServerSocketChannel> listeners = new ArrayList<>();
        RingGroup result = null;
        try {
            InetAddress ip = InetAddress.getByName(host);
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

            record Member(int parentRank, int color, int key, byte[] ip, int[] ports) {}
            List<Member> members = new ArrayList<>();
            ByteBuffer b = all.segment().asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            for (int q = 0; q < size; q++) {
                int c = b.getInt(q * rec);
                int kk = b.getInt(q * rec + 4);
                byte[] a = new byte[4];
                b.get(q * rec + 8, a);
                int[] ports = new int[k];
                for (int j = 0; j < k; j++) ports[j] = b.getInt(q * rec + 12 + 4 * j);
                if (c == color) members.add(new Member(q, c, kk, a, ports));
            }
            members.sort(Comparator.comparingInt(Member::key).thenComparingInt(Member::parentRank));
            int m = members.size();
            int newRank = -1;
            for (int i = 0; i < m; i++) if (members.get(i).parentRank() == rank) newRank = i;
            RingLog log = new RingLog(verbose, "rank " + rank + " -> split colour " + color + " rank " + newRank);
            if (m == 1) {
                result = new RingGroup(0, 1, k, null, host, timeout, jobToken, verbose, spinNanos, transport, shmLinkBytes);
                return result;
            }
            int right = (newRank + 1) % m;
            int left = (newRank - 1 + m) % m;
            Member rm = members.get(right);
            List<RingConnector.Listener> ls = new ArrayList<>();
            List<RingConnector.Target> targets = new ArrayList<>();
            List<String> ownTexts = new ArrayList<>();
            List<String> theirTexts = new ArrayList<>();
            InetAddress rightIp = InetAddress.getByAddress(rm.ip());
            for (int j = 0; j < k; j++) {
                String ownText = host + ":" + ((InetSocketAddress) listeners.get(j).getLocalAddress()).getPort();
                ls.add(new RingConnector.Listener(j, ownText, listeners.get(j)));
                ownTexts.add(ownText);
                String t = rightIp.getHostAddress() + ":" + rm.ports()[j];
                targets.add(new RingConnector.Target(j, t, new InetSocketAddress(rightIp, rm.ports()[j])));
                theirTexts.add(t);
            }
            RingConnector.Connections c = new RingConnector(newRank, left, right, log, jobToken).connect(ls, targets, timeout);
            result = fromConnections(newRank, m, left, right, c, ownTexts, theirTexts, host, timeout, jobToken, log, verbose,
                    spinNanos, transport, shmLinkBytes);
            return result;
        } catch (IOException e) {
            throw new ConnectFailedException("rank " + rank + ": split(" + color + ", " + key + ") failed: " + e, e);
        } finally {
            for (ServerSocketChannel l : listeners) RingConnector.closeQuietly(l);
        }
    }

    @Override
    public void close() {
        if (engine != null) engine.close();
    }
}
