package dev.jdist.jaccl;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Reducer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static dev.jdist.jaccl.JacclCollectives.copy;
import static dev.jdist.jaccl.JacclCollectives.frames;

/**
 * The JACCL mesh algorithms (docs/reference/collectives.md §4.5): every rank has a queue pair to every other
 * rank. Frame classes follow the whole message's byte count; reductions use the JACCL rule of §1.3.
 */
final class MeshCollectives implements JacclCollectives {
    /** Messages up to this many bytes use the fully connected form. */
    static final long FULLY_CONNECTED_LIMIT = 32 * 1024;

    private final FrameEngine engine;
    private final int rank, n;
    private final int[] peers;
    private final MemorySegment accumulator = Arena.ofAuto().allocate(Frames.size(Frames.CLASSES - 1), 64);

    MeshCollectives(FrameEngine engine, int size) {
        this.engine = engine;
        this.rank = engine.rank();
        this.n = size;
        this.peers = new int[n - 1];
        for (int p = 0, i = 0; p < n; p++) if (p != rank) peers[i++] = p;
    }

    @Override
    public void allReduce(MemorySegment in, MemorySegment out, DType dtype, long elements, ReduceOp op) {
        int s = dtype.itemSize();
        long bytes = elements * s;
        if (n <= 2 || bytes <= FULLY_CONNECTED_LIMIT) {
            fullyConnected(in, 0, out, 0, dtype, elements, op);
            return;
        }
        long chunk = elements / n;
        long chunkBytes = chunk * s;
        int frameClass = Frames.classFor(bytes);
        // reduce-scatter of the first n*chunk elements, rank r's reduced chunk left in place in out
        reduceScatter(in, 0, out, rank * chunkBytes, chunkBytes, dtype, op, frameClass, "all_" + name(op) + " reduce-scatter");
        // in-place all-gather of the reduced chunks
        gather(out, rank * chunkBytes, out, chunkBytes, frameClass, "all_" + name(op) + " all-gather");
        long tail = elements - n * chunk;
        if (tail > 0) fullyConnected(in, n * chunkBytes, out, n * chunkBytes, dtype, tail, op);
    }

    @Override
    public void allGather(MemorySegment in, MemorySegment out, long bytes) {
        gather(in, 0, out, bytes, Frames.classFor(bytes), "all_gather");
    }

    @Override
    public void sumScatter(MemorySegment in, MemorySegment out, DType dtype, long chunkElements) {
        long chunkBytes = chunkElements * dtype.itemSize();
        reduceScatter(in, 0, out, 0, chunkBytes, dtype, ReduceOp.SUM, Frames.classFor(chunkBytes), "sum_scatter");
    }

    @Override
    public void send(MemorySegment x, long bytes, int dst) {
        checkPeer(dst, "send to");
        int c = Frames.classFor(bytes);
        int f = Frames.size(c);
        engine.run("send to rank " + dst, List.of(new FrameEngine.SendStream(new int[]{dst}, -1, frames(bytes, f),
                engine.slots(FrameEngine.Role.DATA, rank, c),
                (k, buf) -> MemorySegment.copy(x, k * f, buf, 0, Math.min(f, bytes - k * f)))), List.of(), null);
    }

    @Override
    public void recv(MemorySegment out, long bytes, int src) {
        checkPeer(src, "receive from");
        int c = Frames.classFor(bytes);
        int f = Frames.size(c);
        engine.run("recv from rank " + src, List.of(), List.of(new FrameEngine.RecvStream(src, src, frames(bytes, f),
                engine.slots(FrameEngine.Role.DATA, src, c),
                (k, buf) -> {
                    MemorySegment.copy(buf, 0, out, k * f, Math.min(f, bytes - k * f));
                    return true;
                })), null);
    }

    private void checkPeer(int peer, String what) {
        if (peer == rank || peer < 0 || peer >= n) {
            throw new IllegalArgumentException("JACCL rank " + rank + " cannot " + what + " rank " + peer
                    + "; the peer must be another rank of this group (0.." + (n - 1) + ")");
        }
    }

    /**
     * Fully connected form: every rank sends all of {@code in[inOff..]} to every peer; frame k of the
     * output is {@code op(...op(op(x0, x1), x2)..., x_{n-1})} in rank order, identical on all ranks.
     */
    private void fullyConnected(MemorySegment in, long inOff, MemorySegment out, long outOff, DType dtype, long count, ReduceOp op) {
        int s = dtype.itemSize();
        long bytes = count * s;
        if (bytes == 0) return;
        int c = Frames.classFor(bytes);
        int f = Frames.size(c);
        long k = frames(bytes, f);
        FrameEngine.SendStream send = new FrameEngine.SendStream(peers, -1, k, engine.slots(FrameEngine.Role.DATA, rank, c),
                (fr, buf) -> MemorySegment.copy(in, inOff + fr * f, buf, 0, Math.min(f, bytes - fr * f)));
        FrameEngine.RecvStream[] from = new FrameEngine.RecvStream[n];
        List<FrameEngine.RecvStream> recvs = new ArrayList<>();
        for (int p : peers) {
            from[p] = new FrameEngine.RecvStream(p, p, k, engine.slots(FrameEngine.Role.DATA, p, c), (fr, buf) -> false);
            recvs.add(from[p]);
        }
        long[] next = {0};
        engine.run("all_" + name(op), List.of(send), recvs, () -> {
            boolean progressed = false;
            while (next[0] < k) {
                long fr = next[0];
                for (int p : peers) if (from[p].arrived <= fr) return progressed;
                long len = Math.min(f, bytes - fr * f);
                MemorySegment first = rank == 0 ? in.asSlice(inOff + fr * f, len) : from[0].frame(fr);
                MemorySegment.copy(first, 0, accumulator, 0, len);
                for (int q = 1; q < n; q++) {
                    MemorySegment inc = q == rank ? in.asSlice(inOff + fr * f, len) : from[q].frame(fr);
                    Reducer.reduce(Reducer.Rule.JACCL, op, dtype, accumulator, 0, inc, 0, len / s);
                }
                MemorySegment.copy(accumulator, 0, out, outOff + fr * f, len);
                for (int p : peers) from[p].released = fr + 1;
                next[0]++;
                progressed = true;
            }
            return progressed;
        });
    }

    /**
     * Reduce-scatter: {@code in} holds n chunks of {@code chunkBytes} from {@code inOff}; out[ownOff..]
     * := own chunk, then every received frame of chunk {@code rank} is combined in as it arrives.
     */
    private void reduceScatter(MemorySegment in, long inOff, MemorySegment out, long ownOff, long chunkBytes, DType dtype,
                               ReduceOp op, int c, String what) {
        if (chunkBytes == 0) return;
        int s = dtype.itemSize();
        int f = Frames.size(c);
        long k = frames(chunkBytes, f);
        copy(in, inOff + rank * chunkBytes, out, ownOff, chunkBytes);
        List<FrameEngine.SendStream> sends = new ArrayList<>();
        List<FrameEngine.RecvStream> recvs = new ArrayList<>();
        for (int p : peers) {
            long chunkOff = inOff + p * chunkBytes;
            sends.add(new FrameEngine.SendStream(new int[]{p}, -1, k, engine.slots(FrameEngine.Role.SCATTER_SEND, p, c),
                    (fr, buf) -> MemorySegment.copy(in, chunkOff + fr * f, buf, 0, Math.min(f, chunkBytes - fr * f))));
            recvs.add(new FrameEngine.RecvStream(p, p, k, engine.slots(FrameEngine.Role.SCATTER_RECV, p, c), (fr, buf) -> {
                long len = Math.min(f, chunkBytes - fr * f);
                Reducer.reduce(Reducer.Rule.JACCL, op, dtype, out, ownOff + fr * f, buf, 0, len / s);
                return true;
            }));
        }
        engine.run(what, sends, recvs, null);
    }

    /** All-gather of blocks of {@code bytes}: own block (at {@code in[inOff]}) to out block rank, sent to every peer. */
    private void gather(MemorySegment in, long inOff, MemorySegment out, long bytes, int c, String what) {
        if (bytes == 0) return;
        int f = Frames.size(c);
        long k = frames(bytes, f);
        copy(in, inOff, out, rank * bytes, bytes);
        long own = rank * bytes;
        FrameEngine.SendStream send = new FrameEngine.SendStream(peers, -1, k, engine.slots(FrameEngine.Role.DATA, rank, c),
                (fr, buf) -> MemorySegment.copy(out, own + fr * f, buf, 0, Math.min(f, bytes - fr * f)));
        List<FrameEngine.RecvStream> recvs = new ArrayList<>();
        for (int p : peers) {
            long block = p * bytes;
            recvs.add(new FrameEngine.RecvStream(p, p, k, engine.slots(FrameEngine.Role.DATA, p, c), (fr, buf) -> {
                MemorySegment.copy(buf, 0, out, block + fr * f, Math.min(f, bytes - fr * f));
                return true;
            }));
        }
        engine.run(what, List.of(send), recvs, null);
    }

    static String name(ReduceOp op) {
        return op.name().toLowerCase(java.util.Locale.ROOT);
    }
}
