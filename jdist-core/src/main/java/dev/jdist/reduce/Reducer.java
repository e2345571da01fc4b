package dev.jdist.reduce;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Element-wise {@code acc := op(acc, inc)} over little-endian element images, with the ring's
 * rules (spec collectives.md §1.3): ties and unordered comparisons keep {@code acc}.
 *
 * <p>This is the scalar reference implementation; vectorised kernels must give identical bytes.
 */
public final class Reducer {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Reducer() {}

    /**
     * Combines {@code count} elements: {@code acc[accOffset..] := op(acc, inc[incOffset..])}.
     * Offsets are in bytes.
     */
    public static void reduce(ReduceOp op, DType dtype, MemorySegment acc, long accOffset,
                              MemorySegment inc, long incOffset, long count) {
        int s = dtype.itemSize();
        for (long i = 0; i < count; i++) {
            long a = accOffset + i * s;
            long b = incOffset + i * s;
            switch (dtype) {
                case BOOL -> {
                    boolean x = acc.get(ValueLayout.JAVA_BYTE, a) != 0, y = inc.get(ValueLayout.JAVA_BYTE, b) != 0;
                    boolean r = op == ReduceOp.MIN ? x && y : x || y;
                    acc.set(ValueLayout.JAVA_BYTE, a, (byte) (r ? 1 : 0));
                }
                case INT8, UINT8 -> {
                    byte x = acc.get(ValueLayout.JAVA_BYTE, a), y = inc.get(ValueLayout.JAVA_BYTE, b);
                    int cmp = dtype == DType.UINT8 ? Integer.compare(x & 0xFF, y & 0xFF) : Byte.compare(x, y);
                    acc.set(ValueLayout.JAVA_BYTE, a, op == ReduceOp.SUM ? (byte) (x + y) : pick(op, cmp) ? y : x);
                }
                case INT16, UINT16 -> {
                    short x = acc.get(I16, a), y = inc.get(I16, b);
                    int cmp = dtype == DType.UINT16 ? Integer.compare(x & 0xFFFF, y & 0xFFFF) : Short.compare(x, y);
                    acc.set(I16, a, op == ReduceOp.SUM ? (short) (x + y) : pick(op, cmp) ? y : x);
                }
                case INT32, UINT32 -> {
                    int x = acc.get(I32, a), y = inc.get(I32, b);
                    int cmp = dtype == DType.UINT32 ? Integer.compareUnsigned(x, y) : Integer.compare(x, y);
                    acc.set(I32, a, op == ReduceOp.SUM ? x + y : pick(op, cmp) ? y : x);
                }
                case INT64, UINT64 -> {
                    long x = acc.get(I64, a), y = inc.get(I64, b);
                    int cmp = dtype == DType.UINT64 ? Long.compareUnsigned(x, y) : Long.compare(x, y);
                    acc.set(I64, a, op == ReduceOp.SUM ? x + y : pick(op, cmp) ? y : x);
                }
                case FLOAT32 -> acc.set(F32, a, combine(op, acc.get(F32, a), inc.get(F32, b)));
                case FLOAT64 -> {
                    double x = acc.get(F64, a), y = inc.get(F64, b);
                    acc.set(F64, a, switch (op) {
                        case SUM -> x + y;
                        case MAX -> x < y ? y : x;
                        case MIN -> y < x ? y : x;
                    });
                }
                case FLOAT16 -> {
                    float r = combine(op, Float.float16ToFloat(acc.get(I16, a)), Float.float16ToFloat(inc.get(I16, b)));
                    acc.set(I16, a, Float.floatToFloat16(r));
                }
                case BFLOAT16 -> {
                    float r = combine(op, Float.intBitsToFloat(acc.get(I16, a) << 16), Float.intBitsToFloat(inc.get(I16, b) << 16));
                    acc.set(I16, a, dev.jdist.Array.floatToBfloat16(r));
                }
                case COMPLEX64 -> {
                    float xr = acc.get(F32, a), xi = acc.get(F32, a + 4), yr = inc.get(F32, b), yi = inc.get(F32, b + 4);
                    if (op == ReduceOp.SUM) {
                        acc.set(F32, a, xr + yr);
                        acc.set(F32, a + 4, xi + yi);
                    } else {
                        boolean xLess = xr < yr || (xr == yr && xi < yi);
                        boolean yLess = yr < xr || (yr == xr && yi < xi);
                        boolean takeInc = op == ReduceOp.MAX ? xLess : yLess;
                        if (takeInc) {
                            acc.set(F32, a, yr);
                            acc.set(F32, a + 4, yi);
                        }
                    }
                }
            }
        }
    }

    /** For max/min of integers: take {@code inc} when it is strictly better ({@code cmp} compares acc to inc). */
    private static boolean pick(ReduceOp op, int cmp) {
        return op == ReduceOp.MAX ? cmp < 0 : cmp > 0;
    }

    private static float combine(ReduceOp op, float x, float y) {
        return switch (op) {
            case SUM -> x + y;
            case MAX -> x < y ? y : x;
            case MIN -> y < x ? y : x;
        };
    }
}
