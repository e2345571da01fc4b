package dev.jdist.jaccl;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.reduce.Reducer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static dev.jdist.jaccl.JacclCollectives.copy;
import static dev.jdist.jaccl.JacclCollectives.frames;

/**
 * The JACCL ring algorithms (docs/reference/collectives.md §4.6) over {@code m} wires to each neighbour:
 * {@code left[w]} is connection {@code w}, {@code right[w]} is {@code m + w}. Direction 0 sends to
 * the right and receives from the left; direction 1 the reverse. Each step runs every
 * (direction, wire) stream at once; the frame class follows the per-wire slice in bytes.
 *
 * <p>{@code all_gather} deviates from MLX on purpose ([MLX-defect]: MLX's cannot deliver whole
 * blocks): direction 0 carries the first half of every block, direction 1 the second, each half
 * split over the wires.
 */
final class RingCollectives implements JacclCollectives {
    static final long TWO_DIRECTION_LIMIT = 32768;
    static final long SCATTER_ONE_WIRE_LIMIT = 65536;

    private final FrameEngine engine;
    private final int rank, n, m, left, right;
    private MemorySegment scratch = MemorySegment.NULL;

    RingCollectives(FrameEngine engine, int size, int wires) {
        this.engine = engine;
        this.rank = engine.rank();
        this.n = size;
        this.m = wires;
        this.left = (rank - 1 + n) % n;
        this.right = (rank + 1) % n;
    }

    private int mod(long x) { return (int) Math.floorMod(x, (long) n); }

    private int leftConn(int w) { return w; }

    private int rightConn(int w) { return m + w; }

    private int sendConn(int d, int w) { return d == 0 ? rightConn(w) : leftConn(w); }

    private int recvConn(int d, int w) { return d == 0 ? leftConn(w) : rightConn(w); }

    /** A byte range {@code [start, start+len)}. */
    private record Range(long start, long len) {}

    /** Part (d, w) of chunk j: offset {@code (d*wires + w)*slice} inside the chunk, clipped to the chunk (units: elements or bytes). */
    private static Range part(long chunkStart, long chunkEnd, int d, int w, int wires, long slice) {
        long start = chunkStart + (d * (long) wires + w) * slice;
        long end = Math.min(start + slice, chunkEnd);
        return new Range(start, Math.max(0, end - start));
    }

    @Override
    public void allReduce(MemorySegment in, MemorySegment out, DType dtype, long elements, ReduceOp op) {
        if (elements == 0) return;
        int s = dtype.itemSize();
        long bytes = elements * s;
        boolean small = bytes <= TWO_DIRECTION_LIMIT || elements < 2L * n * m;
        int dirs = small ? 1 : 2, wires = small ? 1 : m;
        long chunk = (elements + n - 1) / n;
        long slice = (chunk + dirs * wires - 1) / (dirs * wires);
        int c = Frames.classFor(slice * s);
        int f = Frames.size(c);
        String what = "all_" + MeshCollectives.name(op);
        // reduce-scatter: direction 0 sends chunk r-t and receives r-t-1; direction 1 sends r+t and receives r+t+1
        for (int t = 0; t < n - 1; t++) {
            List<FrameEngine.SendStream> sends = new ArrayList<>();
            List<FrameEngine.RecvStream> recvs = new ArrayList<>();
            MemorySegment src = t == 0 ? in : out;
            for (int d = 0; d < dirs; d++) {
                int sc = d == 0 ? mod(rank - t) : mod(rank + t);
                int rc = d == 0 ? mod(rank - t - 1) : mod(rank + t + 1);
                for (int w = 0; w < wires; w++) {
                    Range sr = elementPart(sc, chunk, elements, d, w, wires, slice, s);
                    Range rr = elementPart(rc, chunk, elements, d, w, wires, slice, s);
                    sends.add(sendStream(d, w, c, sr.len, (k, buf) -> MemorySegment.copy(src, sr.start + k * f, buf, 0, Math.min(f, sr.len - k * f))));
                    recvs.add(recvStream(d, w, c, rr.len, (k, buf) -> {
                        long off = rr.start + k * f, len = Math.min(f, rr.len - k * f);
                        copy(in, off, out, off, len);
                        Reducer.reduce(Reducer.Rule.JACCL, op, dtype, out, off, buf, 0, len / s);
                        return true;
                    }));
                }
            }
            engine.run(what + " reduce-scatter step " + t, sends, recvs, null);
        }
        // all-gather: direction 0 owns chunk r+1 and moves back; direction 1 owns r-1 and moves forward
        for (int t = 0; t < n - 1; t++) {
            List<FrameEngine.SendStream> sends = new ArrayList<>();
            List<FrameEngine.RecvStream> recvs = new ArrayList<>();
            for (int d = 0; d < dirs; d++) {
                int sc = d == 0 ? mod(rank + 1 - t) : mod(rank - 1 + t);
                int rc = d == 0 ? mod(rank - t) : mod(rank + t);
                for (int w = 0; w < wires; w++) {
                    Range sr = elementPart(sc, chunk, elements, d, w, wires, slice, s);
                    Range rr = elementPart(rc, chunk, elements, d, w, wires, slice, s);
                    addCopyStreams(sends, recvs, d, w, c, out, sr, out, rr);
                }
            }
            engine.run(what + " all-gather step " + t, sends, recvs, null);
        }
    }

    private static Range elementPart(int j, long chunk, long elements, int d, int w, int wires, long slice, int s) {
        long cs = Math.min(elements, j * chunk), ce = Math.min(elements, (j + 1) * chunk);
        Range r = part(cs, ce, d, w, wires, slice);
        return new Range(r.start * s, r.len * s);
    }

    @Override
    public void allGather(MemorySegment in, MemorySegment out, long bytes) {
        if (bytes == 0) return;
        copy(in, 0, out, rank * bytes, bytes);
        long slice = (bytes + 2L * m - 1) / (2L * m);
        int c = Frames.classFor(slice);
        for (int t = 0; t < n - 1; t++) {
            List<FrameEngine.SendStream> sends = new ArrayList<>();
            List<FrameEngine.RecvStream> recvs = new ArrayList<>();
            for (int d = 0; d < 2; d++) {
                int sb = d == 0 ? mod(rank - t) : mod(rank + t);
                int rb = d == 0 ? mod(rank - t - 1) : mod(rank + t + 1);
                for (int w = 0; w < m; w++) {
                    Range sr = part(sb * bytes, (sb + 1) * bytes, d, w, m, slice);
                    Range rr = part(rb * bytes, (rb + 1) * bytes, d, w, m, slice);
                    addCopyStreams(sends, recvs, d, w, c, out, sr, out, rr);
                }
            }
            engine.run("all_gather step " + t, sends, recvs, null);
        }
    }

    @Override
    public void sumScatter(MemorySegment in, MemorySegment out, DType dtype, long chunkElements) {
        if (chunkElements == 0) return;
        int s = dtype.itemSize();
        long chunkBytes = chunkElements * s;
        int wires = (n * chunkElements < 2L * n * m || chunkBytes <= SCATTER_ONE_WIRE_LIMIT) ? 1 : m;
        long slice = (chunkElements + 2L * wires - 1) / (2L * wires);
        int c = Frames.classFor(slice * s);
        int f = Frames.size(c);
        MemorySegment acc = scratch(2 * chunkBytes);
        for (int t = 0; t < n - 1; t++) {
            boolean last = t == n - 2;
            List<FrameEngine.SendStream> sends = new ArrayList<>();
            List<FrameEngine.RecvStream> recvs = new ArrayList<>();
            MemorySegment sendFrom = t == 0 ? in : acc;
            long sendBase = t == 0 ? -1 : ((t - 1) % 2) * chunkBytes; // -1: use the input chunk
            MemorySegment recvInto = last ? out : acc;
            long recvBase = last ? 0 : (t % 2) * chunkBytes;
            for (int d = 0; d < 2; d++) {
                int sc = d == 0 ? mod(rank - 1 - t) : mod(rank + 1 + t);
                int rc = d == 0 ? mod(rank - 2 - t) : mod(rank + 2 + t);
                for (int w = 0; w < wires; w++) {
                    Range p = part(0, chunkElements, d, w, wires, slice);
                    long pStart = p.start * s, pLen = p.len * s;
                    long sOff = (sendBase < 0 ? sc * chunkBytes : sendBase) + pStart;
                    long inRecv = rc * chunkBytes + pStart;
                    long dst = recvBase + pStart;
                    sends.add(sendStream(d, w, c, pLen, (k, buf) -> MemorySegment.copy(sendFrom, sOff + k * f, buf, 0, Math.min(f, pLen - k * f))));
                    recvs.add(recvStream(d, w, c, pLen, (k, buf) -> {
                        long len = Math.min(f, pLen - k * f);
                        MemorySegment.copy(in, inRecv + k * f, recvInto, dst + k * f, len);
                        Reducer.reduce(Reducer.Rule.JACCL, ReduceOp.SUM, dtype, recvInto, dst + k * f, buf, 0, len / s);
                        return true;
                    }));
                }
            }
            engine.run("sum_scatter step " + t, sends, recvs, null);
        }
    }

    @Override
    public void send(MemorySegment x, long bytes, int dst) {
        if (dst != left && dst != right) {
            throw new UnsupportedCollectiveException("JACCL ring: rank " + rank + " can only send to its neighbours (rank " + left
                    + " and rank " + right + "), not to rank " + dst + "; use a mesh device file for any-to-any send/recv");
        }
        int d = dst == left ? 1 : 0; // the left connections carry direction 1's sends
        long slice = (bytes + m - 1) / m;
        int c = Frames.classFor(slice);
        int f = Frames.size(c);
        List<FrameEngine.SendStream> sends = new ArrayList<>();
        for (int w = 0; w < m; w++) {
            Range r = part(0, bytes, 0, w, m, slice);
            sends.add(sendStream(d, w, c, r.len, (k, buf) -> MemorySegment.copy(x, r.start + k * f, buf, 0, Math.min(f, r.len - k * f))));
        }
        engine.run("send to rank " + dst, sends, List.of(), null);
    }

    @Override
    public void recv(MemorySegment out, long bytes, int src) {
        if (src != left && src != right) {
            throw new UnsupportedCollectiveException("JACCL ring: rank " + rank + " can only receive from its neighbours (rank " + left
                    + " and rank " + right + "), not from rank " + src + "; use a mesh device file for any-to-any send/recv");
        }
        int d = src == right ? 1 : 0; // the right connections carry direction 1's receives
        long slice = (bytes + m - 1) / m;
        int c = Frames.classFor(slice);
        int f = Frames.size(c);
        List<FrameEngine.RecvStream> recvs = new ArrayList<>();
        for (int w = 0; w < m; w++) {
            Range r = part(0, bytes, 0, w, m, slice);
            recvs.add(recvStream(d, w, c, r.len, (k, buf) -> {
                MemorySegment.copy(buf, 0, out, r.start + k * f, Math.min(f, r.len - k * f));
                return true;
            }));
        }
        engine.run("recv from rank " + src, List.of(), recvs, null);
    }

    private FrameEngine.SendStream sendStream(int d, int w, int c, long bytes, FrameEngine.FrameSource source) {
        return new FrameEngine.SendStream(new int[]{sendConn(d, w)}, d, frames(bytes, Frames.size(c)),
                engine.slots(FrameEngine.Role.RING_SEND, d * m + w, c), source);
    }

    private FrameEngine.RecvStream recvStream(int d, int w, int c, long bytes, FrameEngine.FrameSink sink) {
        return new FrameEngine.RecvStream(recvConn(d, w), d, frames(bytes, Frames.size(c)),
                engine.slots(FrameEngine.Role.RING_RECV, d * m + w, c), sink);
    }

    private void addCopyStreams(List<FrameEngine.SendStream> sends, List<FrameEngine.RecvStream> recvs, int d, int w, int c,
                                MemorySegment from, Range sr, MemorySegment into, Range rr) {
        int f = Frames.size(c);
        sends.add(sendStream(d, w, c, sr.len, (k, buf) -> MemorySegment.copy(from, sr.start + k * f, buf, 0, Math.min(f, sr.len - k * f))));
        recvs.add(recvStream(d, w, c, rr.len, (k, buf) -> {
            MemorySegment.copy(buf, 0, into, rr.start + k * f, Math.min(f, rr.len - k * f));
            return true;
        }));
    }

    private MemorySegment scratch(long bytes) {
        if (scratch.byteSize() < bytes) scratch = Arena.ofAuto().allocate(Math.max(bytes, 2 * scratch.byteSize()), 64);
        return scratch;
    }
}
