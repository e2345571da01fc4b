package dev.jdist.ring;

import dev.jdist.DeadlineExceededException;
import dev.jdist.PeerLostException;
import dev.jdist.reduce.Reducer;
import dev.jdist.shm.ShmLink;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * Moves the bytes of {@link RingSchedule} streams through shared memory ({@code JDIST_TRANSPORT=shm}):
 * the same schedules as {@link TcpTransport}, another transport. Every ring connection {@code left[j]}
 * / {@code right[j]} has two {@link ShmLink}s, one per direction; a stream that TCP would send on
 * {@code left[c]} writes into the outgoing link of {@code left[c]} and reads from the incoming link
 * of {@code right[c]}, and so on, so the neighbour sees exactly the byte sequence TCP would carry.
 *
 * <p>The calling thread drives every stream of the operation: it copies what may be sent into the
 * outgoing links and reduces (or copies) what arrived straight out of the incoming links into the
 * work buffer — no intermediate copy — in bursts ({@link RingSettings.Tuning#shmBurstBytes}), so a chunk it just
 * reduced is usually still in the cache when it forwards it. For reductions whose work buffer starts
 * as a copy of the input ({@link Transfer#source()}), the input is read where the schedule first
 * touches each byte instead of being copied up front. The stream states are reused from operation to
 * operation.
 *
 * <p>Waiting: a short spin ({@link Thread#onSpinWait}, ~2 µs), then {@link Thread#yield} (~1 ms,
 * checking the connections now and then), then sleep: the waiter raises the sleeping flag
 * of every link it waits on, re-checks them, and sleeps in {@code select} on the ring's TCP
 * connections; the neighbour that next publishes on such a link sees the flag and writes one
 * doorbell byte on the connection (see {@link ShmLink}), which wakes it like a TCP receive would.
 * Never an unbounded busy spin, so two ranks on two cores do not starve each other. The TCP
 * connections are otherwise unused and serve as liveness signals: while waiting, an EOF or reset on a
 * connection the operation depends on fails it with {@link PeerLostException} (after the last bytes
 * that peer published were used); no progress for {@code JDIST_TIMEOUT} fails it with
 * {@link DeadlineExceededException}. Either way the group is marked broken and every connection is
 * closed, so the neighbours notice and the failure travels round the ring, as with TCP.
 */
final class ShmTransport extends RingTransportBase {

    /** Longest sleep between checks of the deadline when no doorbell or EOF comes. */
    private static final long MAX_SLEEP_MILLIS = 100;

    private final Endpoint[] left;
    private final Endpoint[] right;
    private final Arena arena;
    /** {@link RingSettings.Tuning}: bytes per stream visit, then how long a waiter spins and yields before sleeping. */
    private final long burstBytes;
    private final long spinNanos;
    private final long yieldNanos;
    private final Run[] runs;
    private final ByteBuffer probeBuffer = ByteBuffer.allocateDirect(256);
    private final Consumer<SelectionKey> onReadable = this::probe;

    /** A ring connection as this transport uses it: its (idle) TCP socket for liveness and its two shared-memory links. */
    private static final class Endpoint {
        final RingConnection connection;
        final ShmLink out;          // this rank writes
        final ShmLink in;           // this rank reads
        String deadWhy;             // what the liveness socket said, once it said it
        Throwable deadCause;
        private final ByteBuffer bell = ByteBuffer.allocateDirect(1);

        Endpoint(RingConnection connection, ShmLink out, ShmLink in) {
            this.connection = connection;
            this.out = out;
            this.in = in;
        }

        /** Wakes the peer, asleep waiting on one of this connection's links: one doorbell byte. */
        void ring() {
            if (deadWhy != null) return;
            bell.clear();
            try {
                connection.channel().write(bell);   // 0 = the peer's receive buffer is full of doorbells already: it is awake
            } catch (IOException e) {
                deadWhy = String.valueOf(e.getMessage());
                deadCause = e;
            }
        }
    }

    /**
     * Takes over {@code connections} (the TCP transport that used them must have been
     * {@linkplain TcpTransport#detach() detached}) with the given links; {@code arena} owns the mappings and is
     * closed with this transport.
     */
    ShmTransport(RingSettings settings, RingConnector.Connections connections, ShmLink[] leftOut, ShmLink[] leftIn,
                 ShmLink[] rightOut, ShmLink[] rightIn, Arena arena, RingLog log) throws IOException {
        super(settings, connections, log, ", shared memory");
        this.arena = arena;
        this.burstBytes = settings.tuning().shmBurstBytes();
        this.spinNanos = settings.tuning().shmSpinNanos();
        this.yieldNanos = settings.tuning().shmYieldNanos();
        int k = connections.perNeighbour();
        this.left = new Endpoint[k];
        this.right = new Endpoint[k];
        for (int j = 0; j < k; j++) {
            left[j] = endpoint(connections.left().get(j), leftOut[j], leftIn[j]);
            right[j] = endpoint(connections.right().get(j), rightOut[j], rightIn[j]);
        }
        this.runs = new Run[2 * k];
        for (int i = 0; i < runs.length; i++) runs[i] = new Run();
    }

    private Endpoint endpoint(RingConnection c, ShmLink out, ShmLink in) throws IOException {
        Endpoint e = new Endpoint(c, out, in);
        register(c, SelectionKey.OP_READ, e);
        return e;
    }

    @Override
    void execute(Transfer t) {
        List<RingSchedule.Stream> streams = t.streams();
        int m = streams.size();
        if (m > runs.length) throw new IllegalStateException(m + " streams for " + runs.length + " stream slots");
        try {
            for (int i = 0; i < m; i++) {
                RingSchedule.Stream s = streams.get(i);
                runs[i].reset(s, t, (s.sendOnLeft() ? left : right)[s.connection()],
                        (s.sendOnLeft() ? right : left)[s.connection()]);
            }
            drive(t.opName(), m);
        } finally {
            for (int i = 0; i < m; i++) runs[i].clear();
        }
    }

    private void drive(String opName, int m) {
        long idleSince = 0;
        int idle = 0;
        boolean spinning = true;
        try {
            while (true) {
                boolean progress = false;
                boolean done = true;
                for (int i = 0; i < m; i++) {
                    Run r = runs[i];
                    progress |= r.pumpSend();
                    progress |= r.pumpRecv();
                    done &= r.done();
                }
                if (done) return;
                if (progress) {
                    idle = 0;
                    continue;
                }
                // Nothing moved in a whole pass. A neighbour seen gone in an earlier pass has had its
                // last published bytes used by now, so if the operation still needs it, it is lost.
                checkDependencies(opName, m);
                checkAborted();
                if (idle++ == 0) {
                    idleSince = System.nanoTime();
                    spinning = true;
                    continue;
                }
                if (spinning) {
                    Thread.onSpinWait();
                    if ((idle & 15) == 0 && System.nanoTime() - idleSince >= spinNanos) spinning = false;
                    continue;
                }
                long now = System.nanoTime();
                long waited = now - idleSince;
                if (waited > timeoutNanos) throw noProgress(opName, Arrays.asList(runs).subList(0, m), "hung, stopped, or");
                if (Thread.currentThread().isInterrupted()) throw interrupted(opName);
                if (waited < spinNanos + yieldNanos) {
                    if ((idle & 7) == 0) pollLiveness();
                    Thread.yield();
                } else {
                    sleep(m, timeoutNanos - waited);
                }
            }
        } catch (IOException | ClosedSelectorException e) {
            throw selectorFailed(opName, e);
        }
    }

    /**
     * Raises the sleeping flag of every link the operation waits on, and unless one of them moved
     * meanwhile, sleeps in {@code select} until a doorbell, an EOF or {@code maxNanos} (at most
     * {@value #MAX_SLEEP_MILLIS} ms); lowers the flags again.
     */
    private void sleep(int m, long maxNanos) throws IOException {
        boolean ready = false;
        for (int i = 0; i < m; i++) {
            Run r = runs[i];
            if (r.in != null && !r.recvDone()) {
                r.in.consumerSleeps(true);
                r.inArmed = true;
                ready |= r.in.readable(1) > 0;
            }
            if (r.out != null && !r.sendDone() && r.sendBlocked) {
                r.out.producerSleeps(true);
                r.outArmed = true;
                ready |= r.out.writable(1) > 0;
            }
        }
        if (!ready) {
            long ms = Math.max(1, Math.min(MAX_SLEEP_MILLIS, (maxNanos + 999_999) / 1_000_000));
            selector.select(onReadable, ms);
        }
        for (int i = 0; i < m; i++) {
            Run r = runs[i];
            if (r.inArmed) {
                r.in.consumerSleeps(false);
                r.inArmed = false;
            }
            if (r.outArmed) {
                r.out.producerSleeps(false);
                r.outArmed = false;
            }
        }
    }

    /** Reads whatever the idle TCP connections report: EOF, reset or stray bytes mark the connection dead. */
    private void pollLiveness() throws IOException {
        selector.selectNow(onReadable);
    }

    private void probe(SelectionKey key) {
        Endpoint c = (Endpoint) key.attachment();
        if (c == null || c.deadWhy != null) return;
        probeBuffer.clear();
        try {
            int n = c.connection.channel().read(probeBuffer);
            if (n < 0) c.deadWhy = "the peer closed its connection (EOF)";
            // n > 0: doorbell bytes, read and forgotten
        } catch (IOException e) {
            c.deadWhy = String.valueOf(e.getMessage());
            c.deadCause = e;
        }
        if (c.deadWhy != null) {
            log.log("connection " + c.connection.name() + " to rank " + c.connection.peer() + ": " + c.deadWhy);
            key.interestOps(0);
        }
    }

    private void checkDependencies(String opName, int m) {
        for (int i = 0; i < m; i++) {
            Run r = runs[i];
            if (r.recvEnd != null && !r.recvDone() && r.recvEnd.deadWhy != null) {
                throw lostConnection(opName, r.recvEnd.connection, "receiving", r.recvEnd.deadWhy, r.recvEnd.deadCause);
            }
            if (r.sendEnd != null && !r.sendDone() && r.sendEnd.deadWhy != null) {
                throw lostConnection(opName, r.sendEnd.connection, "sending", r.sendEnd.deadWhy, r.sendEnd.deadCause);
            }
        }
    }

    @Override
    void release() {
        try {
            arena.close();
        } catch (IllegalStateException ignored) {
            // an operation on another thread still holds the mapping; it is unmapped when that ends
        }
    }

    // ------------------------------------------------------------------ one stream of one operation

    /** The progress of one {@link RingSchedule.Stream}; reused from operation to operation. */
    private final class Run extends StreamCursor {
        Endpoint sendEnd;           // null when the stream sends no bytes
        Endpoint recvEnd;           // null when it receives none
        ShmLink out;
        ShmLink in;
        boolean inArmed;
        boolean outArmed;

        void reset(RingSchedule.Stream s, Transfer t, Endpoint sendEnd, Endpoint recvEnd) {
            begin(s, t);
            boolean sendsBytes = false;
            for (int i = 0, m = sends.size(); i < m && !sendsBytes; i++) sendsBytes = sends.get(i).length() > 0;
            boolean recvsBytes = false;
            for (int i = 0, m = recvs.size(); i < m && !recvsBytes; i++) recvsBytes = recvs.get(i).length() > 0;
            this.sendEnd = sendsBytes ? sendEnd : null;
            this.recvEnd = recvsBytes ? recvEnd : null;
            this.out = sendsBytes ? sendEnd.out : null;
            this.in = recvsBytes ? recvEnd.in : null;
            if (!sendsBytes) sendIdx = sends.size();
            if (!recvsBytes) recvIdx = recvs.size();
            // both sides of a link align at the start of every operation that moves bytes on it
            if (out != null) out.alignProducer();
            if (in != null) in.alignConsumer();
        }

        void clear() {
            sends = null;
            recvs = null;
            transfer = null;
            work = null;
            source = null;
            sendEnd = null;
            recvEnd = null;
            out = null;
            in = null;
        }

        @Override
        RingConnection sendConnection() { return sendEnd == null ? null : sendEnd.connection; }

        @Override
        RingConnection recvConnection() { return recvEnd == null ? null : recvEnd.connection; }

        boolean pumpSend() {
            sendBlocked = false;
            long budget = burstBytes;
            boolean progress = false;
            for (RingSchedule.Item item; (item = sendItem()) != null; ) {
                long want = Math.min(budget, sendable(sendIdx, item.length()) - sendPos);
                if (want <= 0) return progress;
                long n = Math.min(want, out.writable(want));
                if (itemSize > 1) n -= n % itemSize;
                if (n <= 0) {
                    sendBlocked = true;
                    return progress;
                }
                // the first item of a stream is untouched input: read it from the source when there is one
                if (source != null && sendIdx == 0) {
                    out.write(source, transfer.sourceOffsetOf(item.offset() + sendPos), n);
                } else {
                    out.write(work, item.offset() + sendPos, n);
                }
                if (out.claimSleepingConsumer()) sendEnd.ring();
                sendPos += n;
                progress = true;
                budget -= n;
                if (budget <= 0) return true;
            }
            return progress;
        }

        boolean pumpRecv() {
            long budget = burstBytes;
            boolean progress = false;
            for (RingSchedule.Item item; (item = recvItem()) != null; ) {
                long want = Math.min(budget, item.length() - recvPos);
                long n = Math.min(want, in.readable(want));
                if (n <= 0) return progress;
                long dst = item.offset() + recvPos;
                if (item.reduce()) {
                    n = Math.min(n, in.contiguous());
                    n -= n % itemSize;
                    if (n <= 0) return progress;   // cannot happen: positions stay element-aligned
                    if (source != null) MemorySegment.copy(source, transfer.sourceOffsetOf(dst), work, dst, n);
                    Reducer.reduce(transfer.op(), transfer.dtype(), work, dst, in.data(), in.readOffset(), n / itemSize);
                    in.release(n);
                } else {
                    in.read(work, dst, n);
                }
                if (in.claimSleepingProducer()) recvEnd.ring();
                recvPos += n;
                recvStored = recvPos;   // received bytes are stored or combined at once
                progress = true;
                budget -= n;
                if (budget <= 0) return true;
            }
            return progress;
        }
    }
}
