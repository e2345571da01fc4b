package dev.jdist.ring;

import dev.jdist.reduce.Reducer;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;

/**
 * Moves the bytes of a {@link RingSchedule} over a ring's TCP connections (the transport half of
 * the ring; the schedule is the algorithm half).
 *
 * <p>Design: every socket is non-blocking and registered with one {@link Selector} per group. The
 * thread that issues an operation drives it: it writes and reads whatever the sockets accept on
 * every stream (so all parts progress concurrently and each socket sends and receives at the same
 * time — no deadlock on large messages), and sleeps in {@code select} when nothing can move, until
 * a socket is ready or the progress deadline passes. No hand-off between threads, which keeps
 * small operations fast; no busy spinning. Sockets read and write the arrays' {@link MemorySegment}s
 * directly through {@link ByteBuffer} views (at most 1 GiB per call); received partial values land
 * in a per-stream scratch buffer (allocated once per group, at most 16 MiB per group in all) and are
 * combined into the work buffer in place with {@link Reducer} as soon as whole elements have
 * arrived, while the next bytes are still on the way. Sending item i of a stream waits only for the
 * bytes of received item i-1 it forwards, byte by byte.
 *
 * <p>Failure handling (docs/reference/collectives.md §3.5): EOF, reset or any I/O error, or no byte of progress for the
 * timeout while bytes are still expected, fails the operation, marks the group broken (later
 * operations fail at once with the same cause) and closes every socket of the group so both
 * neighbours fail too and the failure travels round the ring.
 */
final class TcpTransport extends RingTransportBase {

    private static final long SCRATCH_PER_GROUP = 16L << 20;
    private static final long SCRATCH_PER_STREAM_MAX = 4L << 20;
    private static final long SCRATCH_MIN = 64L << 10;

    private final Endpoint[] left;
    private final Endpoint[] right;
    private final long spinNanos;
    /** Bytes per socket call and per ByteBuffer view (1 GiB; less in tests that exercise the windowing). */
    private final long window;
    private final MemorySegment[] scratch;
    private final long scratchCap;

    /** A connection as this transport drives it: its selection key and the streams using it in the current operation. */
    private static final class Endpoint {
        final RingConnection connection;
        final SelectionKey key;
        StreamRun sender;
        StreamRun receiver;
        int interest;

        Endpoint(RingConnection connection, SelectionKey key) {
            this.connection = connection;
            this.key = key;
        }
    }

    TcpTransport(RingSettings settings, RingConnector.Connections connections, RingLog log) throws IOException {
        super(settings, connections, log, "");
        this.spinNanos = settings.spinMicros() * 1000;
        this.window = settings.tuning().socketWindowBytes();
        int k = connections.perNeighbour();
        this.left = new Endpoint[k];
        this.right = new Endpoint[k];
        for (int j = 0; j < k; j++) {
            left[j] = endpoint(connections.left().get(j));
            right[j] = endpoint(connections.right().get(j));
        }
        int streams = 2 * Math.max(1, k);
        this.scratch = new MemorySegment[streams];
        this.scratchCap = Math.max(SCRATCH_MIN, Math.min(SCRATCH_PER_STREAM_MAX, SCRATCH_PER_GROUP / streams) & ~7L);
    }

    private Endpoint endpoint(RingConnection c) throws IOException {
        SelectionKey key = register(c, 0, null);
        Endpoint e = new Endpoint(c, key);
        key.attach(e);
        return e;
    }

    /**
     * Hands the connections over to another transport ({@link ShmTransport}): closes this transport's
     * selector but not the sockets; this transport is closed afterwards (its {@link #close()} does nothing).
     */
    void detach() {
        closed = true;
        RingConnector.closeQuietly(selector);
    }

    @Override
    void execute(Transfer t) {
        List<RingSchedule.Stream> streams = t.streams();
        List<StreamRun> runs = new ArrayList<>(streams.size());
        try {
            for (int i = 0; i < streams.size(); i++) {
                RingSchedule.Stream s = streams.get(i);
                Endpoint sendEnd = s.sends().isEmpty() ? null : (s.sendOnLeft() ? left : right)[s.connection()];
                Endpoint recvEnd = s.recvs().isEmpty() ? null : (s.sendOnLeft() ? right : left)[s.connection()];
                StreamRun run = new StreamRun(s, t, sendEnd, recvEnd, needsScratch(s) ? scratchFor(i, s) : null);
                if (sendEnd != null) sendEnd.sender = run;
                if (recvEnd != null) recvEnd.receiver = run;
                runs.add(run);
            }
            drive(t.opName(), runs);
        } finally {
            for (StreamRun r : runs) {
                if (r.sendEnd != null) r.sendEnd.sender = null;
                if (r.recvEnd != null) r.recvEnd.receiver = null;
            }
        }
    }

    private static boolean needsScratch(RingSchedule.Stream s) {
        for (RingSchedule.Item it : s.recvs()) if (it.reduce() && it.length() > 0) return true;
        return false;
    }

    private MemorySegment scratchFor(int i, RingSchedule.Stream s) {
        long need = 0;
        for (RingSchedule.Item it : s.recvs()) need = Math.max(need, it.length());
        long size = Math.min(scratchCap, Math.max(SCRATCH_MIN, (need + 7) & ~7L));
        int slot = i % scratch.length;
        if (scratch[slot] == null || scratch[slot].byteSize() < size) {
            scratch[slot] = Arena.ofAuto().allocate(size, 64);
        }
        return scratch[slot];
    }

    private void drive(String opName, List<StreamRun> runs) {
        long lastProgress = System.nanoTime();
        long spinUntil = lastProgress + spinNanos;
        try {
            while (true) {
                boolean progress = false;
                boolean done = true;
                for (int i = 0, m = runs.size(); i < m; i++) {
                    StreamRun r = runs.get(i);
                    progress |= r.pumpSend();
                    progress |= r.pumpRecv();
                    done &= r.done();
                }
                if (done) return;
                long now = System.nanoTime();
                if (progress) {
                    lastProgress = now;
                    spinUntil = now + spinNanos;
                    continue;
                }
                if (now - spinUntil < 0) {
                    // a short bounded poll before sleeping: the answer to a small message usually comes
                    // within microseconds, sooner than a selector wake-up
                    Thread.yield();
                    continue;
                }
                for (Endpoint s : left) updateInterest(s);
                for (Endpoint s : right) updateInterest(s);
                checkAborted();
                long waitNanos = timeoutNanos - (now - lastProgress);
                if (waitNanos <= 0) throw noProgress(opName, runs, "hung, stopped, unreachable, or");
                if (Thread.currentThread().isInterrupted()) throw interrupted(opName);
                selector.select(Math.max(1, (waitNanos + 999_999) / 1_000_000));
                selector.selectedKeys().clear();
            }
        } catch (IOException | ClosedSelectorException e) {
            throw selectorFailed(opName, e);
        }
    }

    private static void updateInterest(Endpoint s) {
        int want = (s.sender != null && s.sender.sendBlocked ? SelectionKey.OP_WRITE : 0)
                | (s.receiver != null && s.receiver.wantsRead ? SelectionKey.OP_READ : 0);
        if (want != s.interest) {
            s.key.interestOps(want);
            s.interest = want;
        }
    }

    // ------------------------------------------------------------------ one stream of one operation

    /** The progress of one {@link RingSchedule.Stream}: positions in its send and receive item lists. */
    final class StreamRun extends StreamCursor {
        final Endpoint sendEnd;
        final Endpoint recvEnd;
        final MemorySegment scratch;
        final ByteBuffer scratchBuf;

        /** recvGuard[i]: the send item that must be fully written before receive item i may land (it reads the same bytes), or -1. */
        final int[] recvGuard;
        boolean wantsRead;
        long scratchFill;
        long scratchUsed;

        private final WorkWindow sendWindow = new WorkWindow();
        private final WorkWindow recvWindow = new WorkWindow();
        private ByteBuffer sourceWindow;
        private long sourceWindowStart;

        StreamRun(RingSchedule.Stream s, Transfer t, Endpoint sendEnd, Endpoint recvEnd, MemorySegment scratch) {
            begin(s, t);
            this.sendEnd = sendEnd;
            this.recvEnd = recvEnd;
            this.scratch = scratch;
            this.scratchBuf = scratch == null ? null : scratch.asByteBuffer();
            this.recvGuard = guards(sends, recvs);
        }

        @Override
        RingConnection sendConnection() { return sendEnd == null ? null : sendEnd.connection; }

        @Override
        RingConnection recvConnection() { return recvEnd == null ? null : recvEnd.connection; }

        /**
         * For each receive item, the latest send item at or before the same position that covers any
         * of its bytes: data must not land in the work buffer while an earlier send of those bytes is
         * unwritten. A correct peer never sends that early (its bytes depend on ours), but a wrong or
         * hostile one could, so the transport leaves such bytes in the kernel until it is safe.
         */
        private static int[] guards(List<RingSchedule.Item> sends, List<RingSchedule.Item> recvs) {
            int[] g = new int[recvs.size()];
            for (int i = 0; i < g.length; i++) {
                g[i] = -1;
                RingSchedule.Item r = recvs.get(i);
                if (r.length() == 0) continue;
                for (int j = Math.min(i, sends.size() - 1); j >= 0; j--) {
                    RingSchedule.Item s = sends.get(j);
                    if (s.length() > 0 && s.offset() < r.offset() + r.length() && r.offset() < s.offset() + s.length()) {
                        g[i] = j;
                        break;
                    }
                }
            }
            return g;
        }

        private boolean sendItemWritten(int j) {
            return sendIdx > j || (sendIdx == j && sendPos >= sends.get(j).length());
        }

        boolean pumpSend() {
            sendBlocked = false;
            boolean progress = false;
            for (RingSchedule.Item item; (item = sendItem()) != null; ) {
                long limit = sendable(sendIdx, item.length());
                if (sendPos >= limit) return progress;
                // a stream's first item is untouched input: with a source, it goes out of the source
                ByteBuffer b = source != null && sendIdx == 0
                        ? sourceBuffer(transfer.sourceOffsetOf(item.offset() + sendPos), limit - sendPos)
                        : sendWindow.at(item.offset() + sendPos, limit - sendPos);
                int n;
                try {
                    n = sendEnd.connection.channel().write(b);
                } catch (IOException e) {
                    throw lostConnection(transfer.opName(), sendEnd.connection, "sending", String.valueOf(e.getMessage()), e);
                }
                if (n == 0) {
                    sendBlocked = true;
                    return progress;
                }
                sendPos += n;
                progress = true;
            }
            return progress;
        }

        boolean pumpRecv() {
            boolean progress = false;
            wantsRead = false;
            for (RingSchedule.Item item; (item = recvItem()) != null; ) {
                long len = item.length();
                int guard = recvGuard[recvIdx];
                if (guard >= 0 && !sendItemWritten(guard)) return progress;
                ByteBuffer b;
                if (item.reduce()) {
                    long want = Math.min(len - recvPos, scratch.byteSize() - scratchFill);
                    b = scratchBuf;
                    b.limit((int) (scratchFill + want)).position((int) scratchFill);
                } else {
                    b = recvWindow.at(item.offset() + recvPos, len - recvPos);
                }
                int n;
                try {
                    n = recvEnd.connection.channel().read(b);
                } catch (IOException e) {
                    throw lostConnection(transfer.opName(), recvEnd.connection, "receiving", String.valueOf(e.getMessage()), e);
                }
                if (n < 0) {
                    throw lostConnection(transfer.opName(), recvEnd.connection, "receiving",
                            "the peer closed the connection (EOF)", null);
                }
                if (n == 0) {
                    wantsRead = true;
                    return progress;
                }
                progress = true;
                recvPos += n;
                if (item.reduce()) {
                    scratchFill += n;
                    long whole = (scratchFill - scratchUsed) / itemSize;
                    if (whole > 0) {
                        long dst = item.offset() + recvStored;
                        if (source != null) MemorySegment.copy(source, transfer.sourceOffsetOf(dst), work, dst, whole * itemSize);
                        Reducer.reduce(transfer.op(), transfer.dtype(), work, dst, scratch, scratchUsed, whole);
                        recvStored += whole * itemSize;
                        scratchUsed += whole * itemSize;
                    }
                    if (scratchUsed == scratchFill && (scratchFill == scratch.byteSize() || recvStored == len)) {
                        scratchFill = 0;
                        scratchUsed = 0;
                    }
                } else {
                    recvStored = recvPos;
                }
            }
            return progress;
        }

        private ByteBuffer sourceBuffer(long srcOffset, long max) {
            if (sourceWindow == null || srcOffset < sourceWindowStart || srcOffset >= sourceWindowStart + sourceWindow.capacity()) {
                sourceWindow = source.asSlice(srcOffset, Math.min(window, source.byteSize() - srcOffset)).asByteBuffer();
                sourceWindowStart = srcOffset;
            }
            return position(sourceWindow, srcOffset - sourceWindowStart, max);
        }

        /**
         * The work buffer as ByteBuffer views of {@link #window} bytes (views are int-indexed, so large arrays need
         * several): the view that holds an offset, made when the position moves into another window.
         */
        private final class WorkWindow {
            private ByteBuffer view;
            private long index = -1;

            /** The view positioned at work offset {@code offset}, limited to {@code max} bytes (or the window's end). */
            ByteBuffer at(long offset, long max) {
                long w = offset / window;
                if (w != index) {
                    long start = w * window;
                    view = work.asSlice(start, Math.min(window, work.byteSize() - start)).asByteBuffer();
                    index = w;
                }
                return position(view, offset - w * window, max);
            }
        }

        private static ByteBuffer position(ByteBuffer b, long rel, long max) {
            long end = Math.min(b.capacity(), rel + max);
            b.limit((int) end);
            b.position((int) rel);
            return b;
        }
    }
}
