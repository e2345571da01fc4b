package dev.jdist.algo;

import dev.jdist.algo.MeshSchedule.Buffer;

/**
 * The schedules of the operations MLX lacks for a group whose ranks reach only their two ring neighbours (the JACCL
 * ring, docs/reference/collectives.md §13.9): data that must cross the ring is relayed rank by rank, each direction of
 * the ring carrying half of it. Pure functions like {@link PeerSchedules}, with its buffer conventions (a broadcast
 * works on {@code WORK}; a gather's root receives into {@code WORK} block q and the others send {@code WORK[0, bytes)};
 * a scatter the reverse; all_to_all reads {@code INPUT} and writes {@code WORK}, this rank's own block copied by the
 * caller); what a rank only passes on waits in {@code SCRATCH}. The in-memory simulator checks that each completes with
 * nothing buffered between ranks and that every message names a neighbour.
 *
 * <p>Sides: relative to the root (gather, scatter, broadcast), ranks {@code root+1 … root+a} with
 * {@code a = ⌈(n−1)/2⌉} are reached going right and the others going left, so the root uses both of its links and the
 * farthest rank is {@code a} hops away.
 */
public final class NeighbourSchedules {
    private NeighbourSchedules() {}

    /**
     * The broadcast is cut in pieces of at most this many bytes, which follow one another down each chain: a rank passes
     * piece k on while it receives piece k+1, so a long chain costs one piece per hop, not the whole buffer.
     */
    public static final long BROADCAST_PIECE_BYTES = 1 << 20;

    /** Ranks reached going right from a root: relative ranks 1..a. */
    static int rightSide(int size) { return size / 2; }

    /**
     * Broadcast of {@code WORK[0, bytes)} from {@code root} as two pipelined chains: right to relative ranks 1..a, left
     * to n−1..a+1. In step k the root sends piece k to both neighbours and every other rank receives piece k from the
     * neighbour nearer the root while it passes piece k−1 on to the one farther away.
     */
    public static MeshSchedule broadcast(int rank, int size, int root, long bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        long pieces = (bytes + BROADCAST_PIECE_BYTES - 1) / BROADCAST_PIECE_BYTES;
        int a = rightSide(size), v = rel(rank, root, size);
        int right = abs(1, root, size), left = abs(size - 1, root, size);
        if (v == 0) {
            for (long k = 0; k < pieces; k++) {
                if (a >= 1) b.send(right, Buffer.WORK, k * BROADCAST_PIECE_BYTES, piece(k, bytes));
                if (size - 1 > a) b.send(left, Buffer.WORK, k * BROADCAST_PIECE_BYTES, piece(k, bytes));
                b.endStep();
            }
            return b.build();
        }
        boolean rightward = v <= a;
        int parent = abs(rightward ? v - 1 : v + 1, root, size);
        boolean hasChild = rightward ? v < a : v > a + 1;
        int child = abs(rightward ? v + 1 : v - 1, root, size);
        for (long k = 0; k <= pieces; k++) {
            if (k < pieces) b.recv(parent, Buffer.WORK, k * BROADCAST_PIECE_BYTES, piece(k, bytes));
            if (k >= 1 && hasChild) b.send(child, Buffer.WORK, (k - 1) * BROADCAST_PIECE_BYTES, piece(k - 1, bytes));
            b.endStep();
        }
        return b.build();
    }

    private static long piece(long k, long bytes) {
        return Math.min(BROADCAST_PIECE_BYTES, bytes - k * BROADCAST_PIECE_BYTES);
    }

    /**
     * Gather to {@code root} relayed along the ring: relative rank v of the right side sends its own block, then passes
     * on the blocks of v+1, v+2, …, a as they come (one per step, held in two alternating {@code SCRATCH} slots); the
     * left side likewise towards the root's left. The root receives two blocks a step, one from each neighbour, into
     * {@code WORK} block q.
     */
    public static MeshSchedule gather(int rank, int size, int root, long bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        int a = rightSide(size), v = rel(rank, root, size);
        if (v == 0) {
            for (int t = 0; t < Math.max(a, size - 1 - a); t++) {
                int fromRight = 1 + t, fromLeft = size - 1 - t;
                if (fromRight <= a) b.recv(abs(1, root, size), Buffer.WORK, abs(fromRight, root, size) * bytes, bytes);
                if (fromLeft > a) b.recv(abs(size - 1, root, size), Buffer.WORK, abs(fromLeft, root, size) * bytes, bytes);
                b.endStep();
            }
            return b.build();
        }
        boolean rightward = v <= a;
        int towardRoot = abs(rightward ? v - 1 : v + 1, root, size), away = abs(rightward ? v + 1 : v - 1, root, size);
        // the blocks this rank sends, nearest first: its own, then v±1, … to the end of its side
        int count = rightward ? a - v + 1 : v - a;
        for (int t = 0; t < count; t++) {
            if (t == 0) b.send(towardRoot, Buffer.WORK, 0, bytes);
            else b.send(towardRoot, Buffer.SCRATCH, ((t - 1) % 2) * bytes, bytes);
            if (t + 1 < count) b.recv(away, Buffer.SCRATCH, (t % 2) * bytes, bytes);
            b.endStep();
        }
        return b.build();
    }

    /**
     * Scatter from {@code root} relayed along the ring, the reverse of {@link #gather}: the root sends each side's blocks
     * farthest first, one per neighbour and step, from {@code WORK} block q; relative rank v receives the blocks of its
     * side from a down to v, passes on all but its own (held in two alternating {@code SCRATCH} slots) and receives its
     * own, last, into {@code WORK[0, bytes)}.
     */
    public static MeshSchedule scatter(int rank, int size, int root, long bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        int a = rightSide(size), v = rel(rank, root, size);
        if (v == 0) {
            for (int t = 0; t < Math.max(a, size - 1 - a); t++) {
                int toRight = a - t, toLeft = a + 1 + t;
                if (toRight >= 1) b.send(abs(1, root, size), Buffer.WORK, abs(toRight, root, size) * bytes, bytes);
                if (toLeft <= size - 1) b.send(abs(size - 1, root, size), Buffer.WORK, abs(toLeft, root, size) * bytes, bytes);
                b.endStep();
            }
            return b.build();
        }
        boolean rightward = v <= a;
        int towardRoot = abs(rightward ? v - 1 : v + 1, root, size), away = abs(rightward ? v + 1 : v - 1, root, size);
        int count = rightward ? a - v + 1 : v - a;   // blocks that pass through this rank, its own the last
        for (int k = 0; k < count; k++) {
            if (k < count - 1) b.recv(towardRoot, Buffer.SCRATCH, (k % 2) * bytes, bytes);
            else b.recv(towardRoot, Buffer.WORK, 0, bytes);
            if (k >= 1) b.send(away, Buffer.SCRATCH, ((k - 1) % 2) * bytes, bytes);
            b.endStep();
        }
        return b.build();
    }

    /**
     * all_to_all with blocks of any size, stored and forwarded along the ring: {@code bytes[s][d]} is what rank s sends
     * rank d (every rank passes the same matrix; row {@code rank} lies back to back in {@code INPUT}, column
     * {@code rank} is received back to back into {@code WORK}). A block travels right when its destination is at most
     * ⌊n/2⌋ hops to the right, else left. In step t (1-based) each rank passes to its right the blocks that started
     * t−1 hops to its left and still have hops to go, nearest destination first, each its own message (and the mirror
     * image to its left): the first of them ends at the neighbour, the rest wait in {@code SCRATCH} for step t+1.
     * ⌊n/2⌋ steps.
     */
    public static MeshSchedule allToAll(int rank, int size, long[][] bytes) {
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        int rightHops = rightSide(size), leftHops = size - 1 - rightHops;
        long[] so = PeerSchedules.offsets(bytes[rank]);
        long[] column = new long[size];
        for (int s = 0; s < size; s++) column[s] = bytes[s][rank];
        long[] ro = PeerSchedules.offsets(column);
        // scratch: two alternating slots per direction, each as large as the most this rank holds for that direction
        long rightSlot = 0, leftSlot = 0;
        for (int t = 1; t <= rightHops; t++) rightSlot = Math.max(rightSlot, transit(bytes, size, rank, t, rightHops, +1));
        for (int t = 1; t <= leftHops; t++) leftSlot = Math.max(leftSlot, transit(bytes, size, rank, t, leftHops, -1));
        int right = (rank + 1) % size, left = Math.floorMod(rank - 1, size);
        for (int t = 1; t <= rightHops; t++) {
            for (int dir : new int[] {+1, -1}) {
                int hops = dir > 0 ? rightHops : leftHops;
                if (t > hops) continue;
                int next = dir > 0 ? right : left, prev = dir > 0 ? left : right;
                long slotBase = dir > 0 ? 0 : 2 * rightSlot, slot = dir > 0 ? rightSlot : leftSlot;
                // sends: blocks that started at s = rank ∓ (t−1), for destinations t..hops hops from s
                int s = Math.floorMod(rank - dir * (t - 1), size);
                long held = slotBase + ((t - 1) % 2) * slot;   // where step t−1 left them
                for (int h = t; h <= hops; h++) {
                    int d = Math.floorMod(s + dir * h, size);
                    if (t == 1) b.send(next, Buffer.INPUT, so[d], bytes[s][d]);
                    else {
                        b.send(next, Buffer.SCRATCH, held, bytes[s][d]);
                        held += bytes[s][d];
                    }
                }
                // receives: blocks that started at s' = rank ∓ t; the nearest ends here, the rest go to slot t % 2
                int from = Math.floorMod(rank - dir * t, size);
                long into = slotBase + (t % 2) * slot;
                for (int h = t; h <= hops; h++) {
                    int d = Math.floorMod(from + dir * h, size);
                    if (h == t) b.recv(prev, Buffer.WORK, ro[from], bytes[from][d]);
                    else {
                        b.recv(prev, Buffer.SCRATCH, into, bytes[from][d]);
                        into += bytes[from][d];
                    }
                }
            }
            b.endStep();
        }
        return b.build();
    }

    /** Bytes {@code rank} receives in step t in direction {@code dir} and keeps for the next step. */
    private static long transit(long[][] bytes, int size, int rank, int t, int hops, int dir) {
        int from = Math.floorMod(rank - dir * t, size);
        long sum = 0;
        for (int h = t + 1; h <= hops; h++) sum += bytes[from][Math.floorMod(from + dir * h, size)];
        return sum;
    }

    /** Whether {@code peer} is one of {@code rank}'s two ring neighbours. */
    public static boolean isNeighbour(int rank, int size, int peer) {
        return peer == (rank + 1) % size || peer == Math.floorMod(rank - 1, size);
    }

    private static int rel(int rank, int root, int size) { return Math.floorMod(rank - root, size); }

    private static int abs(int relative, int root, int size) { return (relative + root) % size; }
}
