package dev.jdist.jaccl;

import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.spi.Liveness;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Moves streams of whole frames over an {@link RdmaTransport}, two frames in flight per stream
 * (docs/reference/collectives.md §4.4): receives are posted before sends, a slot is re-posted as soon as it is
 * consumed, every completion's status is checked (an error is {@link PeerLostException}), and no
 * completion on any queue pair for {@code JDIST_TIMEOUT} while work is outstanding is a
 * {@link DeadlineExceededException} naming the peers still owed. Either failure marks the engine
 * broken: every later operation fails at once with the same cause.
 *
 * <p>All streams of one step run in the calling thread, which polls every involved completion
 * queue in turn (MLX uses one thread per ring wire; the bytes on the wire are the same).
 *
 * <p>Between jdist ranks the job's liveness watch is consulted while waiting ({@link #useLiveness}): a peer that is
 * gone or stopped (UC reports nothing) or a failure elsewhere in the job ends the wait within {@code JDIST_HEARTBEAT},
 * a peer that closed its group ends a wait for its data after a second without progress, and the progress deadline
 * becomes the watch's (30 min unless {@code JDIST_TIMEOUT} is set). {@link #abort} ends a wait from another thread.
 */
final class FrameEngine {
    enum Role { DATA, SCATTER_SEND, SCATTER_RECV, RING_SEND, RING_RECV }

    /** Fills frame {@code frame} of a send stream into {@code buf}. */
    interface FrameSource {
        void fill(long frame, MemorySegment buf);
    }

    /** Consumes frame {@code frame} of a receive stream; returns true to release the slot now. */
    interface FrameSink {
        boolean consume(long frame, MemorySegment buf);
    }

    /** One sequence of frames sent to one or more connections from the same two slots (a broadcast when several). */
    static final class SendStream {
        final int[] conns;
        final int tag;
        final long frames;
        final RdmaTransport.Buffer[] slots;
        final FrameSource source;
        final long[] completed;
        long posted;

        SendStream(int[] conns, int tag, long frames, RdmaTransport.Buffer[] slots, FrameSource source) {
            this.conns = conns;
            this.tag = tag;
            this.frames = frames;
            this.slots = slots;
            this.source = source;
            this.completed = new long[conns.length];
        }

        long minCompleted() {
            long m = Long.MAX_VALUE;
            for (long c : completed) m = Math.min(m, c);
            return conns.length == 0 ? frames : m;
        }

        boolean done() { return minCompleted() >= frames; }
    }

    /** One sequence of frames received on one connection into two slots. */
    static final class RecvStream {
        final int conn;
        final int tag;
        final long frames;
        final RdmaTransport.Buffer[] slots;
        final FrameSink sink;
        long posted, arrived, released;

        RecvStream(int conn, int tag, long frames, RdmaTransport.Buffer[] slots, FrameSink sink) {
            this.conn = conn;
            this.tag = tag;
            this.frames = frames;
            this.slots = slots;
            this.sink = sink;
        }

        /** The slot buffer holding frame {@code f} (valid between its arrival and its release). */
        MemorySegment frame(long f) { return slots[(int) (f % Frames.SLOTS)].segment(); }

        boolean done() { return released >= frames; }
    }

    /** Without progress for this long, a wait asks whether a peer it waits for has closed its group. */
    private static final long LEFT_CHECK_NANOS = 1_000_000_000L;

    private final RdmaTransport transport;
    private final int rank;
    private volatile Duration timeout;
    private volatile Liveness liveness;
    private volatile DistributedException aborted;
    private final Map<Long, RdmaTransport.Buffer[]> buffers = new HashMap<>();
    private final long[] wrIds = new long[32];
    private final int[] statuses = new int[32];
    private volatile DistributedException broken;

    FrameEngine(RdmaTransport transport, int rank, Duration timeout) {
        this.transport = transport;
        this.rank = rank;
        this.timeout = timeout;
    }

    int rank() { return rank; }

    /** Every member is jdist: consult the job's liveness watch while waiting, and wait for progress up to its deadline. */
    void useLiveness(Liveness watch) {
        this.timeout = watch.progressDeadline();
        this.liveness = watch;
        watch.onFailure(this::abort);
    }

    /** Ends the engine from another thread: a waiting operation fails with {@code cause} (or the watch's error). */
    void abort(DistributedException cause) {
        if (aborted == null) aborted = cause;
        markBroken(cause);
    }

    RdmaTransport transport() { return transport; }

    /** The two slot buffers of a role, index (peer or direction×wire) and frame class; allocated and registered on first use. */
    RdmaTransport.Buffer[] slots(Role role, int index, int frameClass) {
        long key = ((long) role.ordinal() << 40) | ((long) index << 8) | frameClass;
        return buffers.computeIfAbsent(key, k -> {
            RdmaTransport.Buffer[] b = new RdmaTransport.Buffer[Frames.SLOTS];
            for (int s = 0; s < Frames.SLOTS; s++) b[s] = transport.allocate(Frames.size(frameClass));
            return b;
        });
    }

    /** Fails fast when an earlier operation broke the group. */
    void checkHealthy() {
        DistributedException b = broken;
        if (b != null) {
            Liveness l = liveness;
            DistributedException f = l == null ? null : l.failure();
            if (f != null) throw f;
            throw b instanceof DeadlineExceededException
                    ? new DeadlineExceededException("the JACCL group is broken by an earlier failure: " + b.getMessage(), b)
                    : new PeerLostException("the JACCL group is broken by an earlier failure: " + b.getMessage(), b);
        }
    }

    void markBroken(DistributedException e) {
        if (broken == null) broken = e;
    }

    /**
     * Runs streams to completion. Streams on different connections progress together; several listed on one
     * connection in one direction run one after the other, in the order listed. {@code afterPoll} (may be null) runs
     * after each polling round and returns whether it made progress (it may release held receive frames).
     */
    void run(String what, List<SendStream> sends, List<RecvStream> recvs, BooleanSupplier afterPoll) {
        checkHealthy();
        try {
            run0(what, sends, recvs, afterPoll);
        } catch (DistributedException e) {
            markBroken(e);
            throw e;
        }
    }

    private void run0(String what, List<SendStream> sends, List<RecvStream> recvs, BooleanSupplier afterPoll) {
        // per-connection lines of streams in the order listed (connection numbers are small: < 2n or < 2m)
        int maxConn = -1;
        for (SendStream s : sends) if (s.frames > 0) for (int c : s.conns) maxConn = Math.max(maxConn, c);
        for (RecvStream r : recvs) if (r.frames > 0) maxConn = Math.max(maxConn, r.conn);
        sendLines = new Line[maxConn + 1];
        recvLines = new Line[maxConn + 1];
        int count = 0;
        for (SendStream s : sends) {
            if (s.frames == 0) continue;
            for (int i = 0; i < s.conns.length; i++) {
                int c = s.conns[i];
                if (sendLines[c] == null && recvLines[c] == null) count++;
                if (sendLines[c] == null) sendLines[c] = new Line();
                sendLines[c].add(s, i);
            }
        }
        for (RecvStream r : recvs) {
            if (r.frames == 0) continue;
            if (sendLines[r.conn] == null && recvLines[r.conn] == null) count++;
            if (recvLines[r.conn] == null) recvLines[r.conn] = new Line();
            recvLines[r.conn].add(r, 0);
        }
        int[] polled = new int[count];
        for (int c = 0, i = 0; c <= maxConn; c++) if (sendLines[c] != null || recvLines[c] != null) polled[i++] = c;
        // receives first, then sends
        for (RecvStream r : recvs) postReceives(r);
        for (SendStream s : sends) postSends(s);

        long lastProgress = System.nanoTime();
        int idle = 0;
        while (true) {
            boolean all = true;
            for (SendStream s : sends) all &= s.done();
            for (RecvStream r : recvs) all &= r.done();
            if (all) return;

            boolean progressed = false;
            for (int conn : polled) {
                int n = transport.poll(conn, wrIds, statuses);
                for (int i = 0; i < n; i++) {
                    progressed = true;
                    long id = wrIds[i];
                    int kind = Frames.kindOf(id);
                    if (statuses[i] != 0) {
                        throw new PeerLostException("JACCL rank " + rank + ": a " + (kind == Frames.KIND_SEND ? "send to " : "receive from ")
                                + transport.describe(conn) + " completed with " + transport.statusText(statuses[i]) + " during " + what
                                + "; the peer process is gone or the link failed", null, rank, transport.peerOf(conn), what);
                    }
                    SendStream s = kind == Frames.KIND_SEND ? sendHead(conn) : null;
                    RecvStream r = kind == Frames.KIND_RECV ? recvHead(conn) : null;
                    if (s != null) {
                        int idx = sendLines[conn].index(s);
                        checkSlot(id, s.completed[idx], conn, what);
                        s.completed[idx]++;
                    } else if (r != null) {
                        checkSlot(id, r.arrived, conn, what);
                        long f = r.arrived++;
                        if (r.released == f && r.sink.consume(f, r.frame(f))) r.released++;
                    } else {
                        throw new PeerLostException("JACCL rank " + rank + ": unexpected completion (work request 0x" + Long.toHexString(id)
                                + ") from " + transport.describe(conn) + " during " + what + "; the ranks are not running the same operations");
                    }
                }
            }
            if (afterPoll != null && afterPoll.getAsBoolean()) progressed = true;
            for (RecvStream r : recvs) postReceives(r);
            for (SendStream s : sends) postSends(s);

            if (progressed) {
                lastProgress = System.nanoTime();
                idle = 0;
            } else {
                long waited = System.nanoTime() - lastProgress;
                checkWatch(what, recvs, waited);
                if (waited > timeout.toNanos()) throw stalled(what, sends, recvs);
                backoff(idle++);
            }
        }
    }

    /** The liveness watch's verdict, an abort from another thread, or a peer that closed its group: each ends the wait. */
    private void checkWatch(String what, List<RecvStream> recvs, long waited) {
        DistributedException a = aborted;
        Liveness l = liveness;
        if (a != null) {
            DistributedException f = l == null ? null : l.failure();
            throw f != null ? f : a;
        }
        if (l == null) return;
        DistributedException f = l.failure();
        if (f != null) throw f;
        if (waited < LEFT_CHECK_NANOS) return;
        for (RecvStream r : recvs) {
            int peer = transport.peerOf(r.conn);
            if (r.arrived < r.frames && l.hasLeft(peer)) {
                throw new PeerLostException("JACCL rank " + rank + ": " + transport.describe(r.conn) + " closed its group (its program "
                        + "finished or called close()) while this rank waited for its data during " + what + " (" + r.arrived + "/"
                        + r.frames + " frames); every rank must issue the same operations. The group is closed.", null, rank, peer, what);
            }
        }
    }

    private void checkSlot(long id, long expectedFrame, int conn, String what) {
        if (Frames.slotOf(id) != (int) (expectedFrame % Frames.SLOTS)) {
            throw new PeerLostException("JACCL rank " + rank + ": completion for slot " + Frames.slotOf(id) + " out of order on "
                    + transport.describe(conn) + " during " + what);
        }
    }

    /**
     * The streams listed on one connection in one direction, in order. Only the first that is not done is posted: a
     * later one starts when the earlier ones are done, so that the messages of a step to (or from) one peer follow each
     * other on its queue pair in the order listed, each with its own frame class and slots (docs/reference/collectives.md §4.4).
     */
    private static final class Line {
        final List<Object> streams = new ArrayList<>(1);
        final List<Integer> indexes = new ArrayList<>(1);
        int head;

        void add(Object stream, int index) {
            streams.add(stream);
            indexes.add(index);
        }

        int index(Object stream) {
            return indexes.get(streams.indexOf(stream));
        }
    }

    /** The lines of the operation now running (run0's thread only). */
    private Line[] sendLines = new Line[0], recvLines = new Line[0];

    /** The send stream on {@code conn} whose completions arrive now (the first not yet complete there), or null. */
    private SendStream sendHead(int conn) {
        Line l = conn < sendLines.length ? sendLines[conn] : null;
        if (l == null) return null;
        while (l.head < l.streams.size()) {
            SendStream s = (SendStream) l.streams.get(l.head);
            if (s.completed[l.indexes.get(l.head)] < s.frames) return s;
            l.head++;
        }
        return null;
    }

    /** The receive stream on {@code conn} whose frames arrive now (the first not yet arrived in full), or null. */
    private RecvStream recvHead(int conn) {
        Line l = conn < recvLines.length ? recvLines[conn] : null;
        if (l == null) return null;
        while (l.head < l.streams.size()) {
            RecvStream r = (RecvStream) l.streams.get(l.head);
            if (r.arrived < r.frames) return r;
            l.head++;
        }
        return null;
    }

    /** Whether every stream listed before {@code stream} on line {@code l} is done. */
    private static boolean earlierDone(Line l, Object stream) {
        for (Object o : l.streams) {
            if (o == stream) return true;
            if (o instanceof SendStream s ? !s.done() : !((RecvStream) o).done()) return false;
        }
        return true;
    }

    private void postReceives(RecvStream r) {
        if (r.posted >= r.frames) return;
        Line l = recvLines[r.conn];
        if (l.streams.size() > 1 && !earlierDone(l, r)) return;
        while (r.posted < r.frames && r.posted - r.released < Frames.SLOTS) {
            int slot = (int) (r.posted % Frames.SLOTS);
            transport.postRecv(r.conn, r.slots[slot], Frames.wrId(Frames.KIND_RECV, slot, r.tag));
            r.posted++;
        }
    }

    private void postSends(SendStream s) {
        if (s.posted >= s.frames) return;
        for (int conn : s.conns) {
            Line l = sendLines[conn];
            if (l.streams.size() > 1 && !earlierDone(l, s)) return;
        }
        while (s.posted < s.frames && s.posted - s.minCompleted() < Frames.SLOTS) {
            int slot = (int) (s.posted % Frames.SLOTS);
            s.source.fill(s.posted, s.slots[slot].segment());
            for (int conn : s.conns) {
                transport.postSend(conn, s.slots[slot], Frames.wrId(Frames.KIND_SEND, slot, s.tag >= 0 ? s.tag : conn));
            }
            s.posted++;
        }
    }

    private DeadlineExceededException stalled(String what, List<SendStream> sends, List<RecvStream> recvs) {
        List<String> owed = new ArrayList<>();
        for (RecvStream r : recvs) {
            if (r.arrived < r.frames) owed.add("data from " + transport.describe(r.conn) + " (" + r.arrived + "/" + r.frames + " frames)");
        }
        for (SendStream s : sends) {
            for (int i = 0; i < s.conns.length; i++) {
                if (s.completed[i] < s.frames) {
                    owed.add("send completions to " + transport.describe(s.conns[i]) + " (" + s.completed[i] + "/" + s.frames + ")");
                }
            }
        }
        return new DeadlineExceededException("JACCL rank " + rank + ": no progress for " + TcpSideChannel.human(timeout)
                + " (JDIST_TIMEOUT) during " + what + ", still waiting for " + String.join(", ", owed)
                + "; that rank has probably died or stopped calling collectives", null, rank, what, timeout);
    }

    /**
     * Busy-poll first (MLX busy-polls; RDMA completions arrive within microseconds), then yield, then
     * sleep in growing steps of at most 200 µs, so a rank waiting for a slow peer does not burn a core.
     */
    private static void backoff(int idle) {
        if (idle < 2048) Thread.onSpinWait();
        else if (idle < 4096) Thread.yield();
        else LockSupport.parkNanos(Math.min(200_000L, 5_000L * (idle - 4095)));
    }
}
