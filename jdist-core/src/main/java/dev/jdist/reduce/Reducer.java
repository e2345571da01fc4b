package dev.jdist.reduce;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * Element-wise {@code acc := op(acc, inc)} over little-endian element images, in place (
 * docs/reference/collectives.md §1.3): the one entry point of jdist's reductions. With the Vector API module in the
 * JVM ({@link Kernels}) the integers, float32, float64, bool, bfloat16 and complex64 sum run as
 * Vector API kernels ({@link VectorKernels}); otherwise, and for float16 always, as loops C2
 * auto-vectorises ({@link PortableKernels}); complex64 max/min and loop tails use the scalar
 * reference ({@link ScalarReducer}). Every kernel gives the reference's bytes. Nothing is allocated
 * per call once the kernels are compiled.
 */
public final class Reducer {

    /** Which tie/NaN rule a backend uses; they differ only for floating-point max and min. */
    public enum Rule {
        /** Ring (TCP) and MPI custom ops: max = inc if acc &lt; inc else acc; min = inc if inc &lt; acc else acc. */
        RING,
        /** JACCL: max = acc if acc &gt; inc else inc; min = acc if acc &lt; inc else inc. */
        JACCL
    }

    private static final boolean VECTOR_API = Kernels.vectorApi();

    private Reducer() {}

    /** The ring rule: {@code reduce(Rule.RING, ...)}. Offsets are in bytes. */
    public static void reduce(ReduceOp op, DType dtype, MemorySegment acc, long accOffset,
                              MemorySegment inc, long incOffset, long count) {
        reduce(Rule.RING, op, dtype, acc, accOffset, inc, incOffset, count);
    }

    /**
     * Combines {@code count} elements: {@code acc[accOffset..] := op(acc, inc[incOffset..])} under
     * {@code rule}. Offsets are in bytes; {@code acc} must be writable.
     */
    public static void reduce(Rule rule, ReduceOp op, DType dtype, MemorySegment acc, long accOffset,
                              MemorySegment inc, long incOffset, long count) {
        reduce(VECTOR_API, rule, op, dtype, acc, accOffset, inc, incOffset, count);
    }

    /** As the public method, with the kernel set chosen by the caller (tests run both); {@code vectorApi} only with the module. */
    static void reduce(boolean vectorApi, Rule rule, ReduceOp op, DType dtype, MemorySegment acc, long accOffset,
                       MemorySegment inc, long incOffset, long count) {
        if (count < 0) throw new IllegalArgumentException("element count must be >= 0, got " + count);
        if (count == 0) return;
        boolean ring = rule == Rule.RING;
        // VectorKernels is referenced only here and only runs with the module: without it the class is never loaded.
        long done = vectorApi ? VectorKernels.reduce(ring, op, dtype, acc, accOffset, inc, incOffset, count) : 0;
        if (done == 0) done = PortableKernels.reduce(ring, op, dtype, acc, accOffset, inc, incOffset, count);
        if (done < count) {
            long s = dtype.itemSize();
            ScalarReducer.reduce(rule, op, dtype, acc, accOffset + done * s, inc, incOffset + done * s, count - done);
        }
    }
}
