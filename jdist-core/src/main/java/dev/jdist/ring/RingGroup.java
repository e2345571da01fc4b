package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.ConnectFailedException;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;
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
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A ring group (spec collectives.md §3): this rank's connections to its two neighbours and the
 * operations over them. Schedules come from {@link RingSchedule}, bytes move in a {@link RingTransport}
 * ({@link TcpTransport}, or {@link ShmTransport} with {@code JDIST_TRANSPORT=shm}). A 1-rank ring (hostfile
 * with one entry) has no sockets; {@link dev.jdist.Group} turns its collectives into identities.
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
        List<RingSchedule.Stream> streams = lastAllReduce.matches(e, s) ? lastAllReduce.streams
                : lastAllReduce.remember(e, s, RingSchedule.allReduce(rank, size, k, e, s));
        if (RingSchedule.isSmallPath(e, size)) {
            MemorySegment w = small.asSlice(0, (long) size * s);
            w.fill((byte) 0);
            MemorySegment.copy(in.segment(), 0, w, 0, e * s);
            transport.run(Transfer.reduce(name, streams, w, op, dtype));
            MemorySegment.copy(w, 0, out.segment(), 0, e * s);
        } else {
            // out starts as a copy of in: the transport copies, or reads in where the schedule first touches each byte
            transport.run(Transfer.reduceFrom(name, streams, out.segment(), in.segment(), op, dtype));
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
        List<RingSchedule.Stream> streams = lastAllGather.matches(bytes, 0) ? lastAllGather.streams
                : lastAllGather.remember(bytes, 0, RingSchedule.allGather(rank, size, k, bytes));
        transport.run(Transfer.of("all_gather", streams, out.segment()));
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
        for (long lo = 0; lo < chunk; lo += pieceElements) {
            long m = Math.min(pieceElements, chunk - lo);
            MemorySegment work = sumScatterWork((long) size * m * s);
            List<RingSchedule.Stream> streams = lastSumScatter.matches(m, s) ? lastSumScatter.streams
                    : lastSumScatter.remember(m, s, RingSchedule.sumScatter(rank, size, k, m, s));
            // work block c = piece [lo, lo+m) of chunk c: read from the input where the schedule first needs it
            transport.run(Transfer.reduceFromBlocks("sum_scatter", streams, work, in.segment(), m * s, chunk * s, lo * s,
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

    @Override
    public void send(Array x, int dst) {
        if (size == 1) throw new IllegalArgumentException("cannot send to a singleton group");
        pointToPoint("send to rank " + dst, lastSend, x, dst, true);
    }

    @Override
    public void recv(Array out, int src) {
        if (size == 1) throw new IllegalArgumentException("cannot recv from a singleton group");
        pointToPoint("recv from rank " + src, lastRecv, out, src, false);
    }

    private void pointToPoint(String opName, LastSchedule last, Array x, int peer, boolean sending) {
        List<RingSchedule.Stream> streams = last.matches(x.nbytes(), peer) ? last.streams
                : last.remember(x.nbytes(), peer, RingSchedule.pointToPoint(rank, size, k, x.nbytes(), peer, sending));
        transport.run(Transfer.of(opName, streams, x.segment()));
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
            return form(sub, listeners, new RingLog(settings.verbose(),
                    "rank " + rank + " -> split colour " + color + " rank " + newRank));
        } catch (IOException e) {
            throw new ConnectFailedException("rank " + rank + ": split(" + color + ", " + key + ") failed: " + e, e);
        } finally {
            for (ServerSocketChannel l : listeners) RingConnector.closeQuietly(l);
        }
    }

    /** Every member is jdist: the job's liveness watch ends a waiting operation and sets the progress deadline (spec §11). */
    @Override
    public void useLiveness(Liveness liveness) {
        if (transport instanceof RingTransportBase t) t.useLiveness(liveness);
    }

    @Override
    public void close() {
        if (transport != null) transport.close();
    }
}
