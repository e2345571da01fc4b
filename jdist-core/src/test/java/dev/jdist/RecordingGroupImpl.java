package dev.jdist;

import dev.jdist.spi.GroupImpl;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

/** A fake backend group that records every call (no network); tests hook {@link #beforeOp} to block or fail. */
final class RecordingGroupImpl implements GroupImpl {
    final int rank, size;
    final String backend;
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    volatile Consumer<String> beforeOp = op -> {};
    volatile boolean closed;
    /** What {@link #mlxWire()} answers: a backend whose bytes are MLX's (the ring) when true. */
    volatile boolean mlxWire;
    /** What {@link #split} returns (a 1-rank fake when null). */
    volatile java.util.function.Supplier<GroupImpl> splitChild;

    RecordingGroupImpl(String backend, int rank, int size) {
        this.backend = backend;
        this.rank = rank;
        this.size = size;
    }

    private void record(String op) {
        beforeOp.accept(op);
        calls.add(op);
    }

    @Override public int rank() { return rank; }
    @Override public int size() { return size; }
    @Override public String backendName() { return backend; }

    @Override
    public GroupImpl split(int color, int key) {
        record("split " + color + " " + key);
        return splitChild != null ? splitChild.get() : new RecordingGroupImpl(backend, 0, 1);
    }

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        record("allReduce " + op);
        MemorySegment.copy(in.segment(), 0, out.segment(), 0, in.nbytes());
    }

    @Override
    public void allGather(Array in, Array out) {
        record("allGather");
        for (int q = 0; q < size; q++) MemorySegment.copy(in.segment(), 0, out.segment(), q * in.nbytes(), in.nbytes());
    }

    @Override
    public void sumScatter(Array in, Array out) {
        record("sumScatter");
        MemorySegment.copy(in.segment(), rank * out.nbytes(), out.segment(), 0, out.nbytes());
    }

    @Override public void send(Array x, int dst) { record("send " + dst); }

    @Override public void recv(Array out, int src) { record("recv " + src); }

    @Override
    public void broadcast(Array buffer, int root) {
        record("broadcast " + root);
        if (rank != root) buffer.segment().fill((byte) root);
    }

    @Override public void barrier() { record("barrier"); }

    @Override
    public void allToAll(Array in, Array out) {
        record("allToAll");
        MemorySegment.copy(in.segment(), 0, out.segment(), 0, in.nbytes());
    }

    @Override
    public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        record("allToAllV " + java.util.Arrays.toString(sendCounts) + " " + java.util.Arrays.toString(recvCounts));
        out.segment().fill((byte) 0);
    }

    @Override
    public void gather(Array in, Array out, int root) {
        record("gather " + root + (out == null ? " (no output)" : ""));
        if (out != null) for (int q = 0; q < size; q++) MemorySegment.copy(in.segment(), 0, out.segment(), q * in.nbytes(), in.nbytes());
    }

    @Override
    public void scatter(Array in, Array out, int root) {
        record("scatter " + root + (in == null ? " (no input)" : ""));
        if (in != null) MemorySegment.copy(in.segment(), rank * out.nbytes(), out.segment(), 0, out.nbytes());
    }

    @Override
    public void batchSendRecv(List<PeerOp> ops) {
        record("batch " + ops);
    }

    @Override public boolean mlxWire() { return mlxWire; }

    /** As the ring: only the neighbours are MLX's point-to-point peers. */
    @Override
    public String beyondMlxPointToPoint(int peer) {
        int left = (rank - 1 + size) % size, right = (rank + 1) % size;
        return peer == left || peer == right ? null : "only neighbours " + left + " and " + right;
    }

    @Override public void close() { closed = true; }
}
