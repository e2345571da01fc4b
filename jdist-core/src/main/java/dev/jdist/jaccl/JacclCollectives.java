package dev.jdist.jaccl;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;

/** The JACCL operations over flat little-endian element images; mesh and ring implement them. */
interface JacclCollectives {
    /** {@code out[0..E)} := element-wise op over ranks of {@code in[0..E)}; {@code out} may be {@code in}. */
    void allReduce(MemorySegment in, MemorySegment out, DType dtype, long elements, ReduceOp op);

    /** {@code out} ({@code n*N} bytes) receives rank q's {@code in} ({@code N} bytes) at block q. */
    void allGather(MemorySegment in, MemorySegment out, long bytes);

    /** {@code in} holds n chunks of {@code chunkElements}; {@code out} receives chunk {@code rank} of the sum. */
    void sumScatter(MemorySegment in, MemorySegment out, DType dtype, long chunkElements);

    void send(MemorySegment x, long bytes, int dst);

    void recv(MemorySegment out, long bytes, int src);

    /** Number of frames of {@code frameBytes} that carry {@code bytes}. */
    static long frames(long bytes, int frameBytes) {
        return bytes <= 0 ? 0 : (bytes + frameBytes - 1) / frameBytes;
    }

    static boolean sameMemory(MemorySegment a, long aOff, MemorySegment b, long bOff) {
        return a.address() + aOff == b.address() + bOff && a.isNative() == b.isNative()
                && (a.isNative() || a.heapBase().equals(b.heapBase()));
    }

    /** Copies unless source and destination are the same bytes. */
    static void copy(MemorySegment src, long srcOff, MemorySegment dst, long dstOff, long bytes) {
        if (bytes <= 0 || sameMemory(src, srcOff, dst, dstOff)) return;
        MemorySegment.copy(src, srcOff, dst, dstOff, bytes);
    }
}
