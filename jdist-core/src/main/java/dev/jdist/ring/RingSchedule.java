package dev.jdist.ring;

import dev.jdist.UnsupportedCollectiveException;

import java.util.ArrayList;
import java.util.List;

/**
 * The ring's schedules as plain data (docs/reference/collectives.md §3.6–§3.8 and §9): which byte ranges of
 * which buffer go out on which (connection, direction) stream, in which order. Pure functions, no
 * sockets; {@link TcpTransport} moves the bytes.
 *
 * <p>Every collective schedule has the same shape: a list of {@link Stream}s, each the ordered
 * items one part sends and the ordered items it receives. For all of them, the item a stream sends
 * at position {@code i >= 1} covers the same bytes as the item it received at position
 * {@code i - 1} (that is the ring: pass on what just arrived), which is the only data dependency
 * a transport has to respect ({@link Stream#chained()}).
 */
public final class RingSchedule {

    /** MLX's minimum bytes per rank per segment before another part is added. */
    public static final long MIN_PART_BYTES = 262_144;
    /**
     * The same for the one-direction ring between jdist ranks (docs/reference/collectives.md §10.12): its k parts ride k
     * connections, one per address of a host (one per network port), so a middle-sized message is cut as soon as each
     * part still moves 16 KiB per rank per step; MLX's 256 KiB kept a 1 MiB all_sum of 4 hosts on one of two ports.
     */
    public static final long ONE_DIRECTION_MIN_PART_BYTES = 16_384;
    /** MLX's small-path scratch: {@code n * itemsize} must not exceed it. */
    public static final int SMALL_PATH_LIMIT_BYTES = 1024;
    /** Point-to-point split granularity: at least this many bytes per socket. */
    public static final long MIN_SEND_BYTES_PER_SOCKET = 1024;
    /** MLX's ring: parts alternate between the two directions of every connection (§3.6.1, §3.7). */
    public static final int BOTH_DIRECTIONS = 2;
    /** jdist's one-direction ring between jdist ranks (docs/reference/collectives.md §10.12): every part flows r → r-1. */
    public static final int ONE_DIRECTION = 1;

    private RingSchedule() {}

    /** Direction +1: send on {@code left[c]}, receive on {@code right[c]}; -1: the opposite. */
    public record Part(int index, long offset, long length, int connection, int direction) {}

    /** A byte range of the operation's work buffer; {@code reduce} = combine into it, else store or send as is. */
    public record Item(long offset, long length, boolean reduce) {}

    /**
     * One (connection, direction) stream of an operation: what this rank writes on its send socket
     * and reads from its receive socket, in order.
     *
     * @param sendOnLeft true when this rank sends on {@code left[connection]} (and receives on {@code right}),
     *                   as for direction +1
     * @param chained    sends[i] (i ≥ 1) may only go out once recvs[i-1] has been processed (same bytes)
     */
    public record Stream(int connection, boolean sendOnLeft, List<Item> sends, List<Item> recvs, boolean chained) {
        public int direction() { return sendOnLeft ? +1 : -1; }

        public long sendBytes() { return sends.stream().mapToLong(Item::length).sum(); }

        public long recvBytes() { return recvs.stream().mapToLong(Item::length).sum(); }
    }

    // ------------------------------------------------------------------ basic arithmetic

    public static long ceilDiv(long a, long b) { return (a + b - 1) / b; }

    /** {@code x mod n} in {@code [0, n)}. */
    public static int mod(long x, int n) { return (int) Math.floorMod(x, n); }

    /** Whether all_sum/max/min of {@code elements} takes the small path (§3.6.2): {@code E < n}. */
    public static boolean isSmallPath(long elements, int n) { return elements < n; }

    /** §3.6.1: number of parts {@code P = max(1, min(2k, floor(N / (n*262144))))}. */
    public static int allReducePartCount(long bytes, int n, int k) {
        return allReducePartCount(bytes, n, k, BOTH_DIRECTIONS);
    }

    /**
     * §3.6.1 with {@code directions} (2: MLX's rule; 1: §10.12's one-direction ring) in place of the 2:
     * {@code P = max(1, min(directions*k, floor(N / (n*m))))}, m = 262144 (MLX's) or, in one direction, 16384.
     */
    public static int allReducePartCount(long bytes, int n, int k, int directions) {
        return (int) Math.max(1, Math.min((long) directions * k, bytes / (n * minPartBytes(directions))));
    }

    /** The least bytes per rank per part: MLX's, or the one-direction ring's. */
    private static long minPartBytes(int directions) {
        return directions == ONE_DIRECTION ? ONE_DIRECTION_MIN_PART_BYTES : MIN_PART_BYTES;
    }

    /** §3.6.1: the parts of a large-path all-reduce, offsets and lengths in elements. */
    public static List<Part> allReduceParts(long elements, int itemSize, int n, int k) {
        return allReduceParts(elements, itemSize, n, k, BOTH_DIRECTIONS);
    }

    /** The parts of a large-path all-reduce over {@code directions} directions (§3.6.1; §10.12 for 1). */
    public static List<Part> allReduceParts(long elements, int itemSize, int n, int k, int directions) {
        int p = allReducePartCount(elements * itemSize, n, k, directions);
        long step = ceilDiv(elements, p);
        List<Part> parts = new ArrayList<>(p);
        for (int i = 0; i < p; i++) {
            long start = Math.min(elements, i * step);
            long end = Math.min(elements, (i + 1) * step);
            parts.add(new Part(i, start, end - start, partConnection(i, directions), partDirection(i, directions)));
        }
        return parts;
    }

    /** Part i's connection: two parts per connection in both directions (MLX), one per connection in one. */
    static int partConnection(int i, int directions) { return i / directions; }

    /** Part i's direction: alternating +1, -1 (MLX), or always +1 (§10.12). */
    static int partDirection(int i, int directions) { return directions == ONE_DIRECTION || i % 2 == 0 ? +1 : -1; }

    /** §3.6.3: start (inclusive) of segment {@code j} of a part of {@code len} elements. */
    public static long segmentStart(long len, int n, int j) {
        long seg = ceilDiv(len, n);
        return Math.min(j * seg, len);
    }

    /** §3.6.3: end (exclusive) of segment {@code j}. */
    public static long segmentEnd(long len, int n, int j) {
        long seg = ceilDiv(len, n);
        return Math.min((j + 1) * seg, len);
    }

    /** Segment rank r sends in reduce-scatter step t: {@code (r + t*d) mod n}. */
    public static int reduceScatterSendSegment(int r, int t, int d, int n) { return mod(r + (long) t * d, n); }

    /** Segment rank r receives (and combines) in reduce-scatter step t: {@code (r + (t+1)*d) mod n}. */
    public static int reduceScatterRecvSegment(int r, int t, int d, int n) { return mod(r + (long) (t + 1) * d, n); }

    /** Segment rank r sends in all-gather step t: {@code (r + (t-1)*d) mod n}. */
    public static int allGatherSendSegment(int r, int t, int d, int n) { return mod(r + (long) (t - 1) * d, n); }

    /** Segment rank r receives (and stores) in all-gather step t: {@code (r + t*d) mod n}. */
    public static int allGatherRecvSegment(int r, int t, int d, int n) { return mod(r + (long) t * d, n); }

    // ------------------------------------------------------------------ all_sum / all_max / all_min

    /**
     * The streams of an all-reduce of {@code elements} elements of {@code itemSize} bytes, byte
     * offsets into the work buffer. On the large path the work buffer is the output (a copy of the
     * input); on the small path ({@link #isSmallPath}) it is the padded vector W of {@code n} elements.
     *
     * @throws UnsupportedCollectiveException for the small path when {@code n * itemSize > 1024}
     */
    public static List<Stream> allReduce(int r, int n, int k, long elements, int itemSize) {
        return allReduce(r, n, k, BOTH_DIRECTIONS, elements, itemSize);
    }

    /** As {@link #allReduce(int, int, int, long, int)} over {@code directions} directions; the small path is MLX's either way. */
    public static List<Stream> allReduce(int r, int n, int k, int directions, long elements, int itemSize) {
        checkRing(r, n, k);
        checkDirections(directions);
        if (isSmallPath(elements, n)) {
            checkSmallPath(elements, itemSize, n);
            return List.of(onePart(r, n, 0, n, itemSize, 0, -1));
        }
        List<Stream> streams = new ArrayList<>();
        for (Part p : allReduceParts(elements, itemSize, n, k, directions)) {
            streams.add(onePart(r, n, p.offset(), p.length(), itemSize, p.connection(), p.direction()));
        }
        return streams;
    }

    /** §3.6.2 step 1: the MLX limit of the small path. */
    public static void checkSmallPath(long elements, int itemSize, int n) {
        if ((long) n * itemSize > SMALL_PATH_LIMIT_BYTES) {
            throw new UnsupportedCollectiveException("ring all-reduce of " + elements + " element(s) on " + n
                    + " ranks takes the small-array path (fewer elements than ranks), whose " + SMALL_PATH_LIMIT_BYTES
                    + "-byte scratch cannot hold " + n + " elements of " + itemSize + " bytes (MLX has the same limit);"
                    + " use at least " + n + " elements");
        }
    }

    /**
     * §3.6.3: one part over elements {@code [offset, offset+len)} of the work buffer: the
     * reduce-scatter items followed by the all-gather items, in wire order.
     */
    public static Stream onePart(int r, int n, long offset, long len, int itemSize, int connection, int d) {
        List<Item> sends = new ArrayList<>(2 * (n - 1));
        List<Item> recvs = new ArrayList<>(2 * (n - 1));
        for (int t = 0; t <= n - 2; t++) {
            sends.add(segmentItem(offset, len, n, reduceScatterSendSegment(r, t, d, n), itemSize, false));
            recvs.add(segmentItem(offset, len, n, reduceScatterRecvSegment(r, t, d, n), itemSize, true));
        }
        for (int t = 0; t <= n - 2; t++) {
            sends.add(segmentItem(offset, len, n, allGatherSendSegment(r, t, d, n), itemSize, false));
            recvs.add(segmentItem(offset, len, n, allGatherRecvSegment(r, t, d, n), itemSize, false));
        }
        return new Stream(connection, d > 0, List.copyOf(sends), List.copyOf(recvs), true);
    }

    private static Item segmentItem(long offset, long len, int n, int j, int itemSize, boolean reduce) {
        long start = segmentStart(len, n, j);
        long end = segmentEnd(len, n, j);
        return new Item((offset + start) * itemSize, (end - start) * itemSize, reduce);
    }

    // ------------------------------------------------------------------ all_gather

    /** §3.7: number of all_gather parts {@code G = max(1, min(2k, floor(N / 262144)))}. */
    public static int allGatherPartCount(long bytes, int k) {
        return allGatherPartCount(bytes, k, BOTH_DIRECTIONS);
    }

    /** §3.7 with {@code directions} in place of the 2: {@code G = max(1, min(directions*k, floor(N / m)))}, m as above. */
    public static int allGatherPartCount(long bytes, int k, int directions) {
        return (int) Math.max(1, Math.min((long) directions * k, bytes / minPartBytes(directions)));
    }

    /**
     * §3.7: streams of an all_gather of {@code bytes} bytes per rank; offsets are into the output
     * of {@code n * bytes} bytes (block q at {@code q * bytes}). Before the streams run, this rank's
     * input must be in block r. {@code bytes = 0} → no streams.
     */
    public static List<Stream> allGather(int r, int n, int k, long bytes) {
        return allGather(r, n, k, BOTH_DIRECTIONS, bytes);
    }

    /** As {@link #allGather(int, int, int, long)} over {@code directions} directions. */
    public static List<Stream> allGather(int r, int n, int k, int directions, long bytes) {
        checkRing(r, n, k);
        checkDirections(directions);
        if (bytes == 0) return List.of();
        int g = allGatherPartCount(bytes, k, directions);
        long chunk = ceilDiv(bytes, g);
        List<Stream> streams = new ArrayList<>(g);
        for (int i = 0; i < g; i++) {
            long start = Math.min(bytes, i * chunk);
            long len = Math.min(bytes, (i + 1) * chunk) - start;
            int d = partDirection(i, directions);
            List<Item> sends = new ArrayList<>(n - 1);
            List<Item> recvs = new ArrayList<>(n - 1);
            for (int t = 0; t <= n - 2; t++) {
                sends.add(new Item(mod(r + (long) t * d, n) * bytes + start, len, false));
                recvs.add(new Item(mod(r + (long) (t + 1) * d, n) * bytes + start, len, false));
            }
            streams.add(new Stream(partConnection(i, directions), d > 0, List.copyOf(sends), List.copyOf(recvs), true));
        }
        return streams;
    }

    // ------------------------------------------------------------------ send / recv

    /**
     * §3.8: how {@code bytes} bytes are split over the {@code k} sockets of a neighbour:
     * {@code seg = max(1024, ceil(N/k))}; element j is socket j's byte range ({@code [start, end)});
     * sockets that carry nothing are absent.
     */
    public static List<long[]> pointToPointSplit(long bytes, int k) {
        long seg = Math.max(MIN_SEND_BYTES_PER_SOCKET, ceilDiv(bytes, k));
        List<long[]> ranges = new ArrayList<>();
        for (int j = 0; j < k; j++) {
            long start = j * seg;
            if (start >= bytes) break;
            ranges.add(new long[] {start, Math.min(bytes, (j + 1) * seg)});
        }
        return ranges;
    }

    /** Whether a send to {@code dst} goes on the {@code right} sockets (else {@code left}); §3.8. */
    public static boolean sendUsesRight(int r, int n, int dst) {
        if (dst == mod(r + 1, n)) return true;
        if (dst == mod(r - 1, n)) return false;
        throw notNeighbour("send to", r, n, dst);
    }

    /** Whether a receive from {@code src} comes in on the {@code left} sockets (else {@code right}); §3.8. */
    public static boolean recvUsesLeft(int r, int n, int src) {
        if (src == mod(r - 1, n)) return true;
        if (src == mod(r + 1, n)) return false;
        throw notNeighbour("receive from", r, n, src);
    }

    private static IllegalArgumentException notNeighbour(String what, int r, int n, int peer) {
        return new IllegalArgumentException("the ring backend can only " + what + " a direct neighbour: rank " + r
                + " tried to " + what + " rank " + peer + ", but its neighbours are ranks " + mod(r - 1, n) + " (left) and "
                + mod(r + 1, n) + " (right) of " + n + "; route the data through the neighbours or use a backend "
                + "with any-to-any send (mpi)");
    }

    /** §3.8 as streams: a send to {@code dst} (sends only) or a receive from it (recvs only), offsets into the array. */
    public static List<Stream> pointToPoint(int r, int n, int k, long bytes, int peer, boolean sending) {
        checkRing(r, n, k);
        boolean onLeft = sending ? !sendUsesRight(r, n, peer) : recvUsesLeft(r, n, peer);
        List<Stream> streams = new ArrayList<>();
        List<long[]> split = pointToPointSplit(bytes, k);
        for (int j = 0; j < split.size(); j++) {
            long[] range = split.get(j);
            Item item = new Item(range[0], range[1] - range[0], false);
            // A stream's "sendOnLeft" flag names the socket the sends use; receives use the other
            // list. For a receive-only stream we flip it so the receive lands on the chosen list.
            streams.add(sending
                    ? new Stream(j, onLeft, List.of(item), List.of(), false)
                    : new Stream(j, !onLeft, List.of(), List.of(item), false));
        }
        return streams;
    }

    // ------------------------------------------------------------------ sum_scatter (jdist §9)

    /**
     * jdist's ring sum_scatter (docs/reference/collectives.md §9): the input (work buffer) is n chunks of {@code chunkElements}
     * elements. P follows §3.6.1 from the whole input's byte count, parts cut within chunks
     * (element range {@code [i*step, min(C,(i+1)*step))} of every chunk, {@code step = ceil(C/P)}),
     * segment j of a part is that range inside chunk j. Only reduce-scatter, shifted by one step:
     * step t sends segment {@code (r+(t+1)d) mod n} and receives segment {@code (r+(t+2)d) mod n},
     * so rank r ends holding the full reduction of chunk r. When {@code C < P} or {@code C = 0}, P = 1.
     */
    public static List<Stream> sumScatter(int r, int n, int k, long chunkElements, int itemSize) {
        return sumScatter(r, n, k, BOTH_DIRECTIONS, chunkElements, itemSize);
    }

    /** As {@link #sumScatter(int, int, int, long, int)} over {@code directions} directions. */
    public static List<Stream> sumScatter(int r, int n, int k, int directions, long chunkElements, int itemSize) {
        checkRing(r, n, k);
        checkDirections(directions);
        long c = chunkElements;
        int p = allReducePartCount(c * n * itemSize, n, k, directions);
        if (c < p || c == 0) p = 1;
        long step = ceilDiv(c, p);
        List<Stream> streams = new ArrayList<>(p);
        for (int i = 0; i < p; i++) {
            long start = Math.min(c, i * step);
            long len = Math.min(c, (i + 1) * step) - start;
            int d = partDirection(i, directions);
            List<Item> sends = new ArrayList<>(n - 1);
            List<Item> recvs = new ArrayList<>(n - 1);
            for (int t = 0; t <= n - 2; t++) {
                int sj = mod(r + (long) (t + 1) * d, n);
                int rj = mod(r + (long) (t + 2) * d, n);
                sends.add(new Item((sj * c + start) * itemSize, len * itemSize, false));
                recvs.add(new Item((rj * c + start) * itemSize, len * itemSize, true));
            }
            streams.add(new Stream(partConnection(i, directions), d > 0, List.copyOf(sends), List.copyOf(recvs), true));
        }
        return streams;
    }

    private static void checkDirections(int directions) {
        if (directions != ONE_DIRECTION && directions != BOTH_DIRECTIONS) {
            throw new IllegalArgumentException("a ring runs in 1 or 2 directions, not " + directions);
        }
    }

    private static void checkRing(int r, int n, int k) {
        if (n < 2 || r < 0 || r >= n || k < 1) {
            throw new IllegalArgumentException("ring schedule needs n >= 2, 0 <= r < n, k >= 1; got n=" + n + " r=" + r + " k=" + k);
        }
    }
}
