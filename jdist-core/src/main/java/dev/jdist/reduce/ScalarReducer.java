package dev.jdist.reduce;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The reference semantics of docs/reference/collectives.md §1.3, one element at a time. {@link Reducer}'s
 * vector kernels must produce the same bytes; it also uses this class for loop tails and for the
 * dtypes it does not vectorise.
 */
final class ScalarReducer {
    static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private ScalarReducer() {}

    /** {@code acc[i] := op(acc[i], inc[i])} for {@code count} elements from the given byte offsets. */
    static void reduce(Reducer.Rule rule, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                       MemorySegment inc, long b0, long count) {
        boolean ring = rule == Reducer.Rule.RING;
        switch (dtype) {
            case BOOL -> bool(ring, op, dtype, acc, a0, inc, b0, count);
            case INT8, UINT8 -> int8(ring, op, dtype, acc, a0, inc, b0, count);
            case INT16, UINT16 -> int16(ring, op, dtype, acc, a0, inc, b0, count);
            case INT32, UINT32 -> int32(ring, op, dtype, acc, a0, inc, b0, count);
            case INT64, UINT64 -> int64(ring, op, dtype, acc, a0, inc, b0, count);
            case FLOAT32 -> float32(ring, op, dtype, acc, a0, inc, b0, count);
            case FLOAT64 -> float64(ring, op, dtype, acc, a0, inc, b0, count);
            case FLOAT16 -> float16(ring, op, dtype, acc, a0, inc, b0, count);
            case BFLOAT16 -> bfloat16(ring, op, dtype, acc, a0, inc, b0, count);
            case COMPLEX64 -> complex64(ring, op, dtype, acc, a0, inc, b0, count);
        }
    }

    private static void bool(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        // bool + bool is computed in int and converted back: OR; max is OR, min is AND.
        for (long i = 0; i < count; i++) {
            boolean x = acc.get(I8, a0 + i) != 0, y = inc.get(I8, b0 + i) != 0;
            acc.set(I8, a0 + i, (byte) ((op == ReduceOp.MIN ? x && y : x || y) ? 1 : 0));
        }
    }

    private static void int8(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        boolean unsigned = dtype == DType.UINT8;
        for (long i = 0; i < count; i++) {
            byte x = acc.get(I8, a0 + i), y = inc.get(I8, b0 + i);
            int cmp = unsigned ? Integer.compare(x & 0xFF, y & 0xFF) : Byte.compare(x, y);
            acc.set(I8, a0 + i, op == ReduceOp.SUM ? (byte) (x + y) : takeInc(op, cmp) ? y : x);
        }
    }

    private static void int16(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        boolean unsigned = dtype == DType.UINT16;
        for (long i = 0; i < count; i++) {
            short x = acc.get(I16, a0 + 2 * i), y = inc.get(I16, b0 + 2 * i);
            int cmp = unsigned ? Integer.compare(x & 0xFFFF, y & 0xFFFF) : Short.compare(x, y);
            acc.set(I16, a0 + 2 * i, op == ReduceOp.SUM ? (short) (x + y) : takeInc(op, cmp) ? y : x);
        }
    }

    private static void int32(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        boolean unsigned = dtype == DType.UINT32;
        for (long i = 0; i < count; i++) {
            int x = acc.get(I32, a0 + 4 * i), y = inc.get(I32, b0 + 4 * i);
            int cmp = unsigned ? Integer.compareUnsigned(x, y) : Integer.compare(x, y);
            acc.set(I32, a0 + 4 * i, op == ReduceOp.SUM ? x + y : takeInc(op, cmp) ? y : x);
        }
    }

    private static void int64(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        boolean unsigned = dtype == DType.UINT64;
        for (long i = 0; i < count; i++) {
            long x = acc.get(I64, a0 + 8 * i), y = inc.get(I64, b0 + 8 * i);
            int cmp = unsigned ? Long.compareUnsigned(x, y) : Long.compare(x, y);
            acc.set(I64, a0 + 8 * i, op == ReduceOp.SUM ? x + y : takeInc(op, cmp) ? y : x);
        }
    }

    private static void float32(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        for (long i = 0; i < count; i++) {
            acc.set(F32, a0 + 4 * i, combine(ring, op, acc.get(F32, a0 + 4 * i), inc.get(F32, b0 + 4 * i)));
        }
    }

    private static void float64(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        for (long i = 0; i < count; i++) {
            double x = acc.get(F64, a0 + 8 * i), y = inc.get(F64, b0 + 8 * i);
            double r = switch (op) {
                case SUM -> x + y;
                case MAX -> ring ? (x < y ? y : x) : (x > y ? x : y);
                case MIN -> ring ? (y < x ? y : x) : (x < y ? x : y);
            };
            acc.set(F64, a0 + 8 * i, r);
        }
    }

    // Half types: compare as binary32; a sum rounds back to nearest even, max/min keep the chosen
    // operand's own bits (MLX's ternary on its half types returns the operand itself).
    private static void float16(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                                MemorySegment inc, long b0, long count) {
        for (long i = 0; i < count; i++) {
            short xs = acc.get(I16, a0 + 2 * i), ys = inc.get(I16, b0 + 2 * i);
            float x = Float.float16ToFloat(xs), y = Float.float16ToFloat(ys);
            short r = op == ReduceOp.SUM ? toHalf(x + y) : takeIncFloat(ring, op, x, y) ? ys : xs;
            acc.set(I16, a0 + 2 * i, r);
        }
    }

    private static void bfloat16(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                                 MemorySegment inc, long b0, long count) {
        for (long i = 0; i < count; i++) {
            short xs = acc.get(I16, a0 + 2 * i), ys = inc.get(I16, b0 + 2 * i);
            float x = Array.bfloat16ToFloat(xs), y = Array.bfloat16ToFloat(ys);
            short r = op == ReduceOp.SUM ? Array.floatToBfloat16(x + y) : takeIncFloat(ring, op, x, y) ? ys : xs;
            acc.set(I16, a0 + 2 * i, r);
        }
    }

    /**
     * float to float16, round to nearest even, every NaN as the one quiet NaN 0x7E00: the JIT's
     * vectorised conversion and the interpreter's disagree on NaN payloads, and ranks must end
     * with identical bytes whichever code ran.
     */
    static short toHalf(float f) {
        return f != f ? (short) 0x7E00 : Float.floatToFloat16(f);
    }

    /** Max/min of floats: whether the result is {@code inc} (ring: only when strictly better; JACCL: unless acc is). */
    static boolean takeIncFloat(boolean ring, ReduceOp op, float x, float y) {
        return op == ReduceOp.MAX ? (ring ? x < y : !(x > y)) : (ring ? y < x : !(x < y));
    }

    private static void complex64(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                              MemorySegment inc, long b0, long count) {
        for (long i = 0; i < count; i++) {
            long a = a0 + 8 * i, b = b0 + 8 * i;
            float xr = acc.get(F32, a), xi = acc.get(F32, a + 4), yr = inc.get(F32, b), yi = inc.get(F32, b + 4);
            if (op == ReduceOp.SUM) {
                acc.set(F32, a, xr + yr);
                acc.set(F32, a + 4, xi + yi);
                continue;
            }
            // Lexicographic order: real parts first, imaginary parts break ties.
            boolean xLess = xr < yr || (xr == yr && xi < yi);
            boolean yLess = yr < xr || (yr == xr && yi < xi);
            boolean takeInc = ring
                    ? (op == ReduceOp.MAX ? xLess : yLess)      // inc only when strictly better
                    : (op == ReduceOp.MAX ? !yLess : !xLess);   // acc only when strictly better
            if (takeInc) {
                acc.set(F32, a, yr);
                acc.set(F32, a + 4, yi);
            }
        }
    }

    /** Integers: take {@code inc} when strictly better ({@code cmp} compares acc with inc); ties are equal values anyway. */
    private static boolean takeInc(ReduceOp op, int cmp) {
        return op == ReduceOp.MAX ? cmp < 0 : cmp > 0;
    }

    static float combine(boolean ring, ReduceOp op, float x, float y) {
        return switch (op) {
            case SUM -> x + y;
            case MAX -> ring ? (x < y ? y : x) : (x > y ? x : y);
            case MIN -> ring ? (y < x ? y : x) : (x < y ? x : y);
        };
    }
}
