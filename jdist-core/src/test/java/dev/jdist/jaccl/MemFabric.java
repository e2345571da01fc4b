package dev.jdist.jaccl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * An in-memory RDMA fabric that models the verbs semantics the JACCL algorithms rely on (
 * docs/reference/collectives.md §4.4, §4.8): two-sided SEND/RECV of whole registered buffers; per-queue-pair FIFO
 * order; a completion queue per queue pair with a status per work request; at most 32 outstanding
 * sends and 32 outstanding receives per queue pair (posting more is an error, as in verbs); a
 * receive smaller than the send is a length error on both sides. A SEND that finds no posted
 * receive waits for one (the delivery behaviour MLX relies on from the Thunderbolt driver, and
 * what RC's receiver-not-ready retry gives); the bytes are read from the sender's buffer at
 * delivery, so a sender that reuses a buffer before its completion is caught.
 *
 * <p>Failures: {@link #kill} makes a rank vanish (RC: sends to it complete with
 * {@code IBV_WC_RETRY_EXC_ERR}; UC: they complete successfully and the bytes are lost), and
 * {@link #silence} makes a rank stop moving anything without any error.
 */
final class MemFabric {
    static final int MAX_WR = 32;
    static final int CQ_SIZE = 64;

    private final int n;
    private final int wires; // 0 = mesh
    private final JacclConfig.QpMode mode;
    private final Endpoint[][] endpoints;
    private final boolean[] dead;
    private final boolean[] silent;

    /** Mesh fabric of {@code n} ranks. */
    static MemFabric mesh(int n, JacclConfig.QpMode mode) { return new MemFabric(n, 0, mode); }

    /** Ring fabric of {@code n} ranks with {@code m} wires per direction. */
    static MemFabric ring(int n, int m, JacclConfig.QpMode mode) { return new MemFabric(n, m, mode); }

    private MemFabric(int n, int wires, JacclConfig.QpMode mode) {
        this.n = n;
        this.wires = wires;
        this.mode = mode;
        int conns = wires == 0 ? n : 2 * wires;
        endpoints = new Endpoint[n][conns];
        dead = new boolean[n];
        silent = new boolean[n];
        for (int r = 0; r < n; r++) for (int c = 0; c < conns; c++) endpoints[r][c] = new Endpoint(r, c);
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < conns; c++) {
                Endpoint e = endpoints[r][c];
                if (wires == 0) {
                    if (c == r) continue;
                    e.peer = endpoints[c][r];
                } else {
                    int w = c % wires;
                    boolean isLeft = c < wires;
                    int nb = isLeft ? (r - 1 + n) % n : (r + 1) % n;
                    e.peer = endpoints[nb][isLeft ? wires + w : w];
                }
            }
        }
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < conns; c++) {
                Endpoint e = endpoints[r][c];
                if (e.peer != null && e.lock == null) {
                    Object lock = new Object();
                    e.lock = lock;
                    e.peer.lock = lock;
                }
            }
        }
    }

    /**
     * The rank vanishes: sends already queued towards it complete at their senders (RC: with
     * IBV_WC_RETRY_EXC_ERR once the retries run out; UC: successfully, bytes lost); its own queued
     * sends never arrive.
     */
    void kill(int rank) {
        synchronized (this) {
            dead[rank] = true;
        }
        for (Endpoint e : endpoints[rank]) {
            if (e.peer == null) continue;
            synchronized (e.lock) {
                for (Wr w : e.waitingSends) {
                    e.peer.complete(w.wrId(), mode == JacclConfig.QpMode.RC ? Verbs.IBV_WC_RETRY_EXC_ERR : 0, true);
                }
                e.waitingSends.clear();
                e.peer.waitingSends.clear();
            }
        }
    }

    synchronized void silence(int rank) { silent[rank] = true; }

    private synchronized boolean isDead(int r) { return dead[r]; }

    private synchronized boolean isSilent(int r) { return silent[r]; }

    RdmaTransport transport(int rank) { return new Transport(rank); }

    private record Wr(MemSegmentBuffer buffer, long wrId) {}

    private static final class Endpoint {
        final int rank, conn;
        Endpoint peer;
        Object lock;
        final ArrayDeque<Wr> postedRecvs = new ArrayDeque<>();
        final ArrayDeque<Wr> waitingSends = new ArrayDeque<>(); // sends from the peer waiting for a receive here
        final ConcurrentLinkedQueue<long[]> cq = new ConcurrentLinkedQueue<>();
        int outstandingSends, outstandingRecvs;

        Endpoint(int rank, int conn) {
            this.rank = rank;
            this.conn = conn;
        }

        void complete(long wrId, int status, boolean send) {
            if (send) outstandingSends--; else outstandingRecvs--;
            cq.add(new long[]{wrId, status});
            if (cq.size() > CQ_SIZE) throw new IllegalStateException("completion queue overrun on rank " + rank + " conn " + conn);
        }
    }

    record MemSegmentBuffer(MemorySegment segment) implements RdmaTransport.Buffer {}

    /** Delivers the head waiting send into the head posted receive of {@code to}; caller holds the lock. */
    private void deliver(Endpoint to) {
        while (!to.postedRecvs.isEmpty() && !to.waitingSends.isEmpty()) {
            Wr recv = to.postedRecvs.poll();
            Wr send = to.waitingSends.poll();
            Endpoint from = to.peer;
            long len = send.buffer.segment().byteSize();
            if (recv.buffer.segment().byteSize() < len) {
                to.complete(recv.wrId, Verbs.IBV_WC_LOC_LEN_ERR, false);
                from.complete(send.wrId, mode == JacclConfig.QpMode.RC ? Verbs.IBV_WC_REM_INV_REQ_ERR : 0, true);
                continue;
            }
            MemorySegment.copy(send.buffer.segment(), 0, recv.buffer.segment(), 0, len);
            to.complete(recv.wrId, 0, false);
            from.complete(send.wrId, 0, true);
        }
    }

    private final class Transport implements RdmaTransport {
        private final int rank;
        private final Arena arena = Arena.ofShared();
        private boolean closed;

        Transport(int rank) { this.rank = rank; }

        private Endpoint endpoint(int conn) {
            Endpoint e = endpoints[rank][conn];
            if (e.peer == null) throw new IllegalArgumentException("rank " + rank + " has no connection " + conn);
            return e;
        }

        @Override
        public Buffer allocate(long bytes) {
            return new MemSegmentBuffer(arena.allocate(bytes, 4096));
        }

        @Override
        public void postSend(int conn, Buffer buffer, long wrId) {
            Endpoint e = endpoint(conn);
            synchronized (e.lock) {
                if (e.outstandingSends >= MAX_WR) throw new IllegalStateException("rank " + rank + ": more than " + MAX_WR + " sends posted on conn " + conn);
                e.outstandingSends++;
                if (isDead(rank)) return; // a dead process posts nothing that completes
                int peer = e.peer.rank;
                if (isSilent(rank) || isSilent(peer)) {
                    if (mode == JacclConfig.QpMode.UC) {
                        // UC completes locally and the bytes vanish, in posting order: sends queued before the peer
                        // fell silent complete first (a queue pair never completes its work requests out of order)
                        for (Wr w : e.peer.waitingSends) e.complete(w.wrId(), 0, true);
                        e.peer.waitingSends.clear();
                        e.complete(wrId, 0, true);
                    }
                    return;
                }
                if (isDead(peer)) {
                    e.complete(wrId, mode == JacclConfig.QpMode.RC ? Verbs.IBV_WC_RETRY_EXC_ERR : 0, true);
                    return;
                }
                e.peer.waitingSends.add(new Wr((MemSegmentBuffer) buffer, wrId));
                deliver(e.peer);
            }
        }

        @Override
        public void postRecv(int conn, Buffer buffer, long wrId) {
            Endpoint e = endpoint(conn);
            synchronized (e.lock) {
                if (e.outstandingRecvs >= MAX_WR) throw new IllegalStateException("rank " + rank + ": more than " + MAX_WR + " receives posted on conn " + conn);
                e.outstandingRecvs++;
                if (isDead(rank)) return;
                e.postedRecvs.add(new Wr((MemSegmentBuffer) buffer, wrId));
                if (!isSilent(rank) && !isSilent(e.peer.rank)) deliver(e);
            }
        }

        @Override
        public int poll(int conn, long[] wrIds, int[] status) {
            Endpoint e = endpoint(conn);
            if (isDead(rank)) throw new IllegalStateException("rank " + rank + " is dead");
            int i = 0;
            while (i < wrIds.length) {
                long[] c = e.cq.poll();
                if (c == null) break;
                wrIds[i] = c[0];
                status[i] = (int) c[1];
                i++;
            }
            return i;
        }

        @Override
        public int peerOf(int conn) { return endpoint(conn).peer.rank; }

        @Override
        public String describe(int conn) { return "rank " + peerOf(conn) + " (in-memory conn " + conn + ")"; }

        @Override
        public String statusText(int status) { return "status " + status; }

        @Override
        public synchronized void close() {
            if (closed) return;
            closed = true;
            // buffers may still be referenced by queued sends of a broken group; the arena lives until the fabric is dropped
        }
    }
}
