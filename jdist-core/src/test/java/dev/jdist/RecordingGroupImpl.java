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
        return new RecordingGroupImpl(backend, 0, 1);
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

    @Override public void close() { closed = true; }
}
