package dev.jdist.mesh;

import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.algo.MeshSchedule;
import dev.jdist.algo.MeshSchedule.Buffer;
import dev.jdist.algo.MeshSchedule.Combine;
import dev.jdist.algo.MeshSchedule.Message;
import dev.jdist.algo.MeshSchedule.Step;
import dev.jdist.reduce.Reducer;
import dev.jdist.shm.ShmLink;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs {@link MeshSchedule}s over a {@link PeerMesh} (the transport half; the schedules are the algorithm half). The
 * thread that issues an operation drives it, as the ring's TCP transport does: every connection is non-blocking, each
 * step's messages all progress together (so two members exchanging large messages never wait on each other's kernel
 * buffers), received bytes go straight into their buffer, and when nothing can move the thread polls for
 * {@code JDIST_RING_SPIN_US} (yielding the CPU) and then sleeps in the mesh's selector. A step's combines run once all
 * its messages are through (docs/reference/collectives.md §10.3).
 *
 * <p>Shared memory (docs/reference/collectives.md §10.2): for a pair whose connection runs through two {@link ShmLink}s
 * ({@link PeerConnection#sharedMemory()}), a lane copies its bytes into and out of the links instead of the socket, in
 * bursts of {@value #SHM_BURST} bytes, with the same loop, deadline and messages. Before it sleeps the thread raises
 * the sleeping flag of every link it waits on and checks them once more; the peer, after publishing on such a link,
 * sees the flag and writes one doorbell byte on the connection, which wakes the selector (the {@link ShmLink} protocol,
 * as the ring's shared-memory transport uses it: no wake-up is lost). The socket carries nothing else: an end of it,
 * seen while the thread waits, means the peer is gone, and once the bytes the peer published before it went are used
 * the operation fails with {@link PeerLostException} naming it.
 *
 * <p>Failures (docs/reference/collectives.md §10.2): a connection that ends or fails, or no byte of progress for {@code JDIST_TIMEOUT} while bytes
 * are still expected, fails the operation with {@link PeerLostException} or {@link DeadlineExceededException} naming this
 * rank, the peer and its address, and breaks the mesh ({@link PeerMesh#breakWith}). The caller breaks the rest of its
 * group with the same cause.
 */
public final class MeshTransport {
    /** Bytes per socket call and per ByteBuffer view (ByteBuffers are int-indexed). */
    private static final long WINDOW = 1L << 30;
    /** Shared memory: bytes a lane moves per visit in each direction, so that every peer and direction keeps moving. */
    private static final long SHM_BURST = 64L << 10;
    /** Shared memory: the longest sleep between looks at the links (a backstop; the doorbells lose no wake-up). */
    private static final long SHM_MAX_SLEEP_MILLIS = 100;
    /** Shared memory: idle passes between reads of the connections (doorbells, end of a peer) while polling. */
    private static final int SHM_PROBE_EVERY = 8;
    /** Shared memory: how long an idle thread spins on the links ({@link Thread#onSpinWait}) before it starts yielding. */
    private static final long SHM_SPIN_NANOS = 2_000;

    private final PeerMesh mesh;
    private final int rank;
    private final Lane[] lanes;
    private final List<Lane> active = new ArrayList<>();
    private final ByteBuffer bell = ByteBuffer.allocateDirect(1);
    private final ByteBuffer drain = ByteBuffer.allocateDirect(256);
    /** The peers of the last schedule run (callers reuse schedules of repeated calls: no set built per call). */
    private MeshSchedule lastSchedule;
    private int[] lastPeers;

    public MeshTransport(PeerMesh mesh) {
        this.mesh = mesh;
        this.rank = mesh.rank();
        this.lanes = new Lane[mesh.size()];
    }

    public PeerMesh mesh() { return mesh; }

    /**
     * Runs {@code schedule}: {@code work} and {@code scratch} are its buffers ({@code scratch} at least
     * {@link MeshSchedule#scratchBytes()} long, or null when that is 0); combines reduce with {@code op} as {@code dtype}
     * (both null when the schedule has none). {@code opName} names the operation in errors ({@code all_sum (recursive
     * doubling)}). A failure breaks the mesh and is thrown.
     */
    public void run(String opName, MeshSchedule schedule, MemorySegment work, MemorySegment scratch, ReduceOp op, DType dtype) {
        run(opName, schedule, work, scratch, null, op, dtype);
    }

    /** As {@link #run(String, MeshSchedule, MemorySegment, MemorySegment, ReduceOp, DType)}, with an {@code INPUT} buffer. */
    public void run(String opName, MeshSchedule schedule, MemorySegment work, MemorySegment scratch, MemorySegment input,
                    ReduceOp op, DType dtype) {
        mesh.checkUsable(opName);
        if (schedule.steps().isEmpty()) return;
        try {
            if (schedule != lastSchedule) {
                lastPeers = schedule.peers();
                lastSchedule = schedule;
            }
            mesh.connect(lastPeers, opName);
            List<Step> steps = schedule.steps();
            for (int i = 0; i < steps.size(); i++) {
                Step st = steps.get(i);
                if (!st.messages().isEmpty()) moveStep(opName, i, steps.size(), st, work, scratch, input);
                for (Combine c : st.combines()) combine(c, work, scratch, op, dtype);
            }
        } catch (DistributedException e) {
            mesh.failing(e);   // the peers hear why before they see the connections close
            mesh.breakWith(e);
            throw mesh.explain(e);
        } catch (RuntimeException | Error e) {
            // the watch closed the sockets under the operation (a cancelled key, a closed selector): its error says why
            DistributedException w = mesh.watchCause(e);
            if (w != null) throw w;
            // anything unexpected mid-operation leaves the byte streams out of step: the group cannot go on
            mesh.breakWith(new PeerLostException("rank " + rank + ": " + opName + " failed unexpectedly (" + e
                    + "); the members' byte streams are out of step, so the group is closed", e));
            throw e;
        } finally {
            for (Lane l : active) l.reset();
            active.clear();
        }
    }

    private static MemorySegment buffer(Buffer b, MemorySegment work, MemorySegment scratch) {
        return buffer(b, work, scratch, null);
    }

    private static MemorySegment buffer(Buffer b, MemorySegment work, MemorySegment scratch, MemorySegment input) {
        return switch (b) {
            case WORK -> work;
            case SCRATCH -> scratch;
            case INPUT -> input;
        };
    }

    /** {@code into := op(left, right)}; with {@code fromIsLeft} the result is formed in {@code from} and copied. */
    private static void combine(Combine c, MemorySegment work, MemorySegment scratch, ReduceOp op, DType dtype) {
        MemorySegment into = buffer(c.into(), work, scratch);
        MemorySegment from = buffer(c.from(), work, scratch);
        long count = c.bytes() / dtype.itemSize();
        if (c.fromIsLeft()) {
            Reducer.reduce(op, dtype, from, c.fromOffset(), into, c.intoOffset(), count);
            MemorySegment.copy(from, c.fromOffset(), into, c.intoOffset(), c.bytes());
        } else {
            Reducer.reduce(op, dtype, into, c.intoOffset(), from, c.fromOffset(), count);
        }
    }

    // ------------------------------------------------------------------ one step

    private void moveStep(String opName, int index, int of, Step st, MemorySegment work, MemorySegment scratch, MemorySegment input) {
        for (Lane l : active) l.reset();
        active.clear();
        for (Message m : st.messages()) {
            Lane l = lanes[m.peer()];
            if (l == null) l = lanes[m.peer()] = new Lane(m.peer());
            if (l.sends.isEmpty() && l.recvs.isEmpty()) {
                l.connection = mesh.connection(m.peer());
                active.add(l);
            }
            (m.send() ? l.sends : l.recvs).add(m);
        }
        boolean shm = false;
        for (Lane l : active) {
            l.begin(work, scratch, input);
            shm |= l.out != null;
        }
        long spinNanos = mesh.spinNanos();
        long timeoutNanos = mesh.timeoutNanos();
        long lastProgress = System.nanoTime();
        long spinUntil = lastProgress + spinNanos;
        int idle = 0;
        long idleSince = 0;
        while (true) {
            boolean progress = false;
            boolean done = true;
            for (int i = 0, n = active.size(); i < n; i++) {
                Lane l = active.get(i);
                progress |= l.pumpSend(opName);
                progress |= l.pumpRecv(opName);
                done &= l.done();
            }
            if (done) return;
            long now = System.nanoTime();
            if (progress) {
                lastProgress = now;
                spinUntil = now + spinNanos;
                idle = 0;
                continue;
            }
            if (shm) {
                // a peer seen gone in an earlier pass has had the bytes it published before it went used by now
                for (int i = 0, n = active.size(); i < n; i++) active.get(i).checkGone(opName);
                if (idle == 0) idleSince = now;
                if (++idle % SHM_PROBE_EVERY == 0) for (int i = 0, n = active.size(); i < n; i++) active.get(i).probe();
                if (now - idleSince < SHM_SPIN_NANOS) {
                    // the peer's bytes land in memory this thread reads: a few polls without a system call come first
                    Thread.onSpinWait();
                    continue;
                }
            }
            if (now - spinUntil < 0) {
                // the answer to a small message usually comes within microseconds, sooner than a selector wake-up
                Thread.yield();
                continue;
            }
            for (Lane l : active) l.updateInterest();
            long wait = timeoutNanos - (now - lastProgress);
            if (wait <= 0) throw noProgress(opName + " (step " + (index + 1) + " of " + of + ")");
            if (Thread.currentThread().isInterrupted()) {
                throw new PeerLostException("rank " + rank + ": " + opName + " was interrupted in the middle of the operation; "
                        + "the members' byte streams are now out of step, so the group is closed");
            }
            mesh.checkAborted();
            if (!shm) {
                mesh.await((wait + 999_999) / 1_000_000, opName);
                continue;
            }
            boolean ready = false;
            for (Lane l : active) ready |= l.arm();
            if (!ready) mesh.await(Math.min(SHM_MAX_SLEEP_MILLIS, (wait + 999_999) / 1_000_000), opName);
            for (Lane l : active) {
                l.disarm();
                l.probe();
            }
        }
    }

    private DeadlineExceededException noProgress(String opName) {
        List<String> waiting = new ArrayList<>();
        for (Lane l : active) {
            long r = l.recvRemaining();
            if (r > 0) waiting.add("receiving " + r + " more byte(s) from " + l.connection.describe());
            long s = l.sendRemaining();
            if (s > 0 && l.sendBlocked) waiting.add("sending " + s + " more byte(s) to " + l.connection.describe() + ", which stopped reading");
        }
        return new DeadlineExceededException("rank " + rank + ": " + opName + " made no progress for " + mesh.timeoutText()
                + " s (JDIST_TIMEOUT) while " + String.join("; ", waiting) + ". The peer may be hung, stopped, unreachable, or "
                + "running a different sequence of operations; raise JDIST_TIMEOUT if it is just slow. The group is closed.");
    }

    private PeerLostException lost(String opName, PeerConnection c, String direction, String why, Throwable cause) {
        return new PeerLostException("rank " + rank + ": " + opName + " lost the connection to " + c.describe() + " while "
                + direction + ": " + why + ". Rank " + c.peer() + " probably exited or crashed (or a rank it waited for did, "
                + "and its failure travelled here); check its output. The group is closed.", cause, rank, c.peer(), host(c), opName);
    }

    /** The host part of {@code c}'s mesh address ({@code host:port}, IPv6 in brackets). */
    private static String host(PeerConnection c) {
        String a = c.address();
        int colon = a.lastIndexOf(':');
        String h = colon > 0 ? a.substring(0, colon) : a;
        return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
    }

    /** One step's messages to and from one peer, in order, and where they stand. */
    private final class Lane {
        final int peer;
        final List<Message> sends = new ArrayList<>();
        final List<Message> recvs = new ArrayList<>();
        PeerConnection connection;
        MemorySegment work;
        MemorySegment scratch;
        MemorySegment input;
        int sendIdx;
        long sendPos;
        int recvIdx;
        long recvPos;
        ByteBuffer sendView;
        ByteBuffer recvView;
        boolean sendBlocked;
        boolean wantsRead;
        int interest;
        /** Shared memory: this member's links to the peer (null over TCP), their sleeping flags, what ended the peer. */
        ShmLink out;
        ShmLink in;
        boolean outArmed;
        boolean inArmed;
        String goneWhy;
        Throwable goneCause;

        Lane(int peer) { this.peer = peer; }

        void begin(MemorySegment work, MemorySegment scratch, MemorySegment input) {
            this.work = work;
            this.scratch = scratch;
            this.input = input;
            sendIdx = recvIdx = 0;
            sendPos = recvPos = 0;
            sendView = recvView = null;
            sendBlocked = wantsRead = false;
            out = connection.out();
            in = connection.in();
            goneWhy = null;
            goneCause = null;
        }

        void reset() {
            sends.clear();
            recvs.clear();
            if (connection != null && interest != 0 && connection.key().isValid()) connection.key().interestOps(0);
            interest = 0;
            work = scratch = input = null;
            sendView = recvView = null;
        }

        boolean done() { return sendIdx >= sends.size() && recvIdx >= recvs.size(); }

        private ByteBuffer view(Message m, long pos) {
            long len = Math.min(WINDOW, m.length() - pos);
            return buffer(m.buffer(), work, scratch, input).asSlice(m.offset() + pos, len).asByteBuffer();
        }

        boolean pumpSend(String opName) {
            if (out != null) return pumpSendShm();
            sendBlocked = false;
            boolean progress = false;
            while (sendIdx < sends.size()) {
                Message m = sends.get(sendIdx);
                if (sendView == null || !sendView.hasRemaining()) sendView = view(m, sendPos);
                int n;
                try {
                    n = connection.channel().write(sendView);
                } catch (IOException e) {
                    throw lost(opName, connection, "sending", String.valueOf(e.getMessage()), e);
                }
                if (n == 0) {
                    sendBlocked = true;
                    return progress;
                }
                progress = true;
                sendPos += n;
                if (sendPos == m.length()) {
                    sendIdx++;
                    sendPos = 0;
                    sendView = null;
                }
            }
            return progress;
        }

        boolean pumpRecv(String opName) {
            if (in != null) return pumpRecvShm();
            wantsRead = false;
            boolean progress = false;
            while (recvIdx < recvs.size()) {
                Message m = recvs.get(recvIdx);
                if (recvView == null || !recvView.hasRemaining()) recvView = view(m, recvPos);
                int n;
                try {
                    n = connection.channel().read(recvView);
                } catch (IOException e) {
                    throw lost(opName, connection, "receiving", String.valueOf(e.getMessage()), e);
                }
                if (n < 0) throw lost(opName, connection, "receiving", "the peer closed the connection (EOF)", null);
                if (n == 0) {
                    wantsRead = true;
                    return progress;
                }
                progress = true;
                recvPos += n;
                if (recvPos == m.length()) {
                    recvIdx++;
                    recvPos = 0;
                    recvView = null;
                }
            }
            return progress;
        }

        long sendRemaining() {
            long r = -sendPos;
            for (int i = sendIdx; i < sends.size(); i++) r += sends.get(i).length();
            return Math.max(0, r);
        }

        long recvRemaining() {
            long r = -recvPos;
            for (int i = recvIdx; i < recvs.size(); i++) r += recvs.get(i).length();
            return Math.max(0, r);
        }

        void updateInterest() {
            // over shared memory the socket only ever brings doorbells and the peer's end
            int want = out != null ? (done() ? 0 : SelectionKey.OP_READ)
                    : (sendBlocked ? SelectionKey.OP_WRITE : 0) | (wantsRead ? SelectionKey.OP_READ : 0);
            if (want != interest) {
                connection.key().interestOps(want);
                interest = want;
            }
        }

        // -------------------------------------------------------------- over shared memory

        private boolean pumpSendShm() {
            sendBlocked = false;
            long budget = SHM_BURST;
            boolean progress = false;
            while (sendIdx < sends.size()) {
                Message m = sends.get(sendIdx);
                long want = Math.min(budget, m.length() - sendPos);
                long n = Math.min(want, out.writable(want));
                if (n <= 0) {
                    sendBlocked = true;
                    return progress;
                }
                out.write(buffer(m.buffer(), work, scratch, input), m.offset() + sendPos, n);
                if (out.claimSleepingConsumer()) ring();
                progress = true;
                sendPos += n;
                if (sendPos == m.length()) {
                    sendIdx++;
                    sendPos = 0;
                }
                budget -= n;
                if (budget <= 0) return true;
            }
            return progress;
        }

        private boolean pumpRecvShm() {
            long budget = SHM_BURST;
            boolean progress = false;
            while (recvIdx < recvs.size()) {
                Message m = recvs.get(recvIdx);
                long want = Math.min(budget, m.length() - recvPos);
                long n = Math.min(want, in.readable(want));
                if (n <= 0) return progress;
                in.read(buffer(m.buffer(), work, scratch, input), m.offset() + recvPos, n);
                if (in.claimSleepingProducer()) ring();
                progress = true;
                recvPos += n;
                if (recvPos == m.length()) {
                    recvIdx++;
                    recvPos = 0;
                }
                budget -= n;
                if (budget <= 0) return true;
            }
            return progress;
        }

        /** Wakes the peer, asleep on one of this pair's links: one doorbell byte on the connection. */
        private void ring() {
            if (goneWhy != null) return;
            bell.clear();
            try {
                connection.channel().write(bell);   // 0: the peer's socket buffer is full of doorbells already, it is awake
            } catch (IOException e) {
                gone(String.valueOf(e.getMessage()), e);
            }
        }

        /** Reads what the connection brings (doorbells, forgotten; or the peer's end, remembered). */
        void probe() {
            if (out == null || goneWhy != null) return;
            try {
                while (true) {
                    drain.clear();
                    int n = connection.channel().read(drain);
                    if (n == 0) return;
                    if (n < 0) {
                        gone("the peer closed the connection (EOF)", null);
                        return;
                    }
                }
            } catch (IOException e) {
                gone(String.valueOf(e.getMessage()), e);
            }
        }

        private void gone(String why, Throwable cause) {
            goneWhy = why;
            goneCause = cause;
            mesh.log("connection to " + connection.describe() + ": " + why);
        }

        /** Fails the operation when the peer is gone and this lane still needs it (called after a pass that moved nothing). */
        void checkGone(String opName) {
            if (goneWhy == null || done()) return;
            throw lost(opName, connection, recvIdx < recvs.size() ? "receiving" : "sending", goneWhy, goneCause);
        }

        /**
         * Before sleeping: raises the sleeping flag of each link this lane waits on and looks at them once more; true when
         * one of them can move now (or the peer is gone), so the thread must not sleep.
         */
        boolean arm() {
            if (out == null || done()) return false;
            boolean ready = goneWhy != null;
            if (recvIdx < recvs.size()) {
                in.consumerSleeps(true);
                inArmed = true;
                ready |= in.readable(1) > 0;
            }
            if (sendIdx < sends.size() && sendBlocked) {
                out.producerSleeps(true);
                outArmed = true;
                ready |= out.writable(1) > 0;
            }
            return ready;
        }

        void disarm() {
            if (inArmed) {
                in.consumerSleeps(false);
                inArmed = false;
            }
            if (outArmed) {
                out.producerSleeps(false);
                outArmed = false;
            }
        }
    }
}
