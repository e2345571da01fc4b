package dev.jdist.reduce;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * {@link Reducer}'s kernels without the Vector API: plain loops over Java arrays, which C2
 * auto-vectorises. Each call stages the elements through per-thread arrays of {@link #CHUNK}
 * elements ({@code MemorySegment.copy}, a memcpy on little-endian machines), reduces them there and
 * copies the result back: loops that read and write two different segments directly are not
 * vectorised by the JDK 25 compiler (it cannot rule out that they overlap at an unknown distance),
 * while the same loop over two arrays is (measured: docs/benchmarks-log.md).
 *
 * <p>The loops compute exactly what {@link ScalarReducer} computes, element by element (sums are
 * single IEEE additions, comparisons pick one operand's bits), so the bytes equal the Vector API
 * kernels' and the reference's. Nothing is allocated per call once a thread has its arrays.
 */
final class PortableKernels {
    /** Elements per staging chunk: two chunks of the widest type stay within a 32 KiB L1 cache. */
    static final int CHUNK = 2048;

    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(LE);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(LE);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(LE);

    /** Per-thread staging arrays, each made on first use by that thread. */
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private PortableKernels() {}

    /**
     * Reduces all {@code count} elements and returns {@code count}, or returns 0 for complex64
     * max/min (lexicographic: {@link ScalarReducer} does those).
     */
    static long reduce(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long a0,
                       MemorySegment inc, long b0, long count) {
        Scratch s = SCRATCH.get();
        switch (dtype) {
            case FLOAT32 -> f32(s, ring, op, acc, a0, inc, b0, count);
            case FLOAT64 -> f64(s, ring, op, acc, a0, inc, b0, count);
            case INT8 -> i8(s, op, false, acc, a0, inc, b0, count);
            case UINT8 -> i8(s, op, true, acc, a0, inc, b0, count);
            case INT16 -> i16(s, op, false, acc, a0, inc, b0, count);
            case UINT16 -> i16(s, op, true, acc, a0, inc, b0, count);
            case INT32 -> i32(s, op, false, acc, a0, inc, b0, count);
            case UINT32 -> i32(s, op, true, acc, a0, inc, b0, count);
            case INT64 -> i64(s, op, false, acc, a0, inc, b0, count);
            case UINT64 -> i64(s, op, true, acc, a0, inc, b0, count);
            case BOOL -> bool(s, op, acc, a0, inc, b0, count);
            case COMPLEX64 -> {
                if (op != ReduceOp.SUM) return 0;
                f32(s, true, op, acc, a0, inc, b0, 2 * count);   // (re, im) pairs add like floats
            }
            case BFLOAT16 -> bf16(s, ring, op, acc, a0, inc, b0, count);
            case FLOAT16 -> f16(s, ring, op, acc, a0, inc, b0, count);
        }
        return count;
    }

    // One loop per operator and rule: the loop body must be fixed for C2 to vectorise it.

    private static void f32(Scratch s, boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        float[] x = s.floats(0), y = s.floats(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, F32, a0 + 4 * done, x, 0, len);
            MemorySegment.copy(inc, F32, b0 + 4 * done, y, 0, len);
            switch (op) {
                case SUM -> { for (int i = 0; i < len; i++) x[i] += y[i]; }
                // IEEE compares are false for NaN: ring keeps acc, JACCL takes inc.
                case MAX -> {
                    if (ring) for (int i = 0; i < len; i++) x[i] = x[i] < y[i] ? y[i] : x[i];
                    else for (int i = 0; i < len; i++) x[i] = x[i] > y[i] ? x[i] : y[i];
                }
                case MIN -> {
                    if (ring) for (int i = 0; i < len; i++) x[i] = y[i] < x[i] ? y[i] : x[i];
                    else for (int i = 0; i < len; i++) x[i] = x[i] < y[i] ? x[i] : y[i];
                }
            }
            MemorySegment.copy(x, 0, acc, F32, a0 + 4 * done, len);
        }
    }

    private static void f64(Scratch s, boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        double[] x = s.doubles(0), y = s.doubles(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, F64, a0 + 8 * done, x, 0, len);
            MemorySegment.copy(inc, F64, b0 + 8 * done, y, 0, len);
            switch (op) {
                case SUM -> { for (int i = 0; i < len; i++) x[i] += y[i]; }
                case MAX -> {
                    if (ring) for (int i = 0; i < len; i++) x[i] = x[i] < y[i] ? y[i] : x[i];
                    else for (int i = 0; i < len; i++) x[i] = x[i] > y[i] ? x[i] : y[i];
                }
                case MIN -> {
                    if (ring) for (int i = 0; i < len; i++) x[i] = y[i] < x[i] ? y[i] : x[i];
                    else for (int i = 0; i < len; i++) x[i] = x[i] < y[i] ? x[i] : y[i];
                }
            }
            MemorySegment.copy(x, 0, acc, F64, a0 + 8 * done, len);
        }
    }

    // Integers: ties are equal values, so Math.max/min match the scalar rule bit for bit; unsigned
    // types compare after widening with a mask (8, 16 bits) or after flipping the sign bit (32, 64).

    private static void i8(Scratch s, ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        byte[] x = s.bytes(0), y = s.bytes(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I8, a0 + done, x, 0, len);
            MemorySegment.copy(inc, I8, b0 + done, y, 0, len);
            switch (op) {
                case SUM -> { for (int i = 0; i < len; i++) x[i] += y[i]; }
                case MAX -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = (byte) Math.max(x[i] & 0xFF, y[i] & 0xFF);
                    else for (int i = 0; i < len; i++) x[i] = (byte) Math.max(x[i], y[i]);
                }
                case MIN -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = (byte) Math.min(x[i] & 0xFF, y[i] & 0xFF);
                    else for (int i = 0; i < len; i++) x[i] = (byte) Math.min(x[i], y[i]);
                }
            }
            MemorySegment.copy(x, 0, acc, I8, a0 + done, len);
        }
    }

    private static void i16(Scratch s, ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        short[] x = s.shorts(0), y = s.shorts(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I16, a0 + 2 * done, x, 0, len);
            MemorySegment.copy(inc, I16, b0 + 2 * done, y, 0, len);
            switch (op) {
                case SUM -> { for (int i = 0; i < len; i++) x[i] += y[i]; }
                case MAX -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = (short) Math.max(x[i] & 0xFFFF, y[i] & 0xFFFF);
                    else for (int i = 0; i < len; i++) x[i] = (short) Math.max(x[i], y[i]);
                }
                case MIN -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = (short) Math.min(x[i] & 0xFFFF, y[i] & 0xFFFF);
                    else for (int i = 0; i < len; i++) x[i] = (short) Math.min(x[i], y[i]);
                }
            }
            MemorySegment.copy(x, 0, acc, I16, a0 + 2 * done, len);
        }
    }

    private static void i32(Scratch s, ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int[] x = s.ints(0), y = s.ints(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I32, a0 + 4 * done, x, 0, len);
            MemorySegment.copy(inc, I32, b0 + 4 * done, y, 0, len);
            switch (op) {
                case SUM -> { for (int i = 0; i < len; i++) x[i] += y[i]; }
                case MAX -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = Math.max(x[i] ^ Integer.MIN_VALUE, y[i] ^ Integer.MIN_VALUE) ^ Integer.MIN_VALUE;
                    else for (int i = 0; i < len; i++) x[i] = Math.max(x[i], y[i]);
                }
                case MIN -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = Math.min(x[i] ^ Integer.MIN_VALUE, y[i] ^ Integer.MIN_VALUE) ^ Integer.MIN_VALUE;
                    else for (int i = 0; i < len; i++) x[i] = Math.min(x[i], y[i]);
                }
            }
            MemorySegment.copy(x, 0, acc, I32, a0 + 4 * done, len);
        }
    }

    private static void i64(Scratch s, ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        long[] x = s.longs(0), y = s.longs(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I64, a0 + 8 * done, x, 0, len);
            MemorySegment.copy(inc, I64, b0 + 8 * done, y, 0, len);
            switch (op) {
                case SUM -> { for (int i = 0; i < len; i++) x[i] += y[i]; }
                case MAX -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = Math.max(x[i] ^ Long.MIN_VALUE, y[i] ^ Long.MIN_VALUE) ^ Long.MIN_VALUE;
                    else for (int i = 0; i < len; i++) x[i] = Math.max(x[i], y[i]);
                }
                case MIN -> {
                    if (unsigned) for (int i = 0; i < len; i++) x[i] = Math.min(x[i] ^ Long.MIN_VALUE, y[i] ^ Long.MIN_VALUE) ^ Long.MIN_VALUE;
                    else for (int i = 0; i < len; i++) x[i] = Math.min(x[i], y[i]);
                }
            }
            MemorySegment.copy(x, 0, acc, I64, a0 + 8 * done, len);
        }
    }

    /**
     * Any non-zero byte is true; results are 0/1. sum and max are OR, min is AND. For {@code v} in
     * 0..255, {@code (v + 255) >>> 8} is 1 exactly when {@code v != 0}: no branch, so the loop vectorises.
     */
    private static void bool(Scratch s, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        byte[] x = s.bytes(0), y = s.bytes(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I8, a0 + done, x, 0, len);
            MemorySegment.copy(inc, I8, b0 + done, y, 0, len);
            if (op == ReduceOp.MIN) {
                for (int i = 0; i < len; i++) x[i] = (byte) ((((x[i] & 0xFF) + 0xFF) >>> 8) & (((y[i] & 0xFF) + 0xFF) >>> 8));
            } else {
                for (int i = 0; i < len; i++) x[i] = (byte) ((((x[i] | y[i]) & 0xFF) + 0xFF) >>> 8);
            }
            MemorySegment.copy(x, 0, acc, I8, a0 + done, len);
        }
    }

    /**
     * bfloat16 through float32 (bits &lt;&lt; 16). A sum rounds back to nearest even with NaNs made quiet,
     * exactly as {@link dev.jdist.Array#floatToBfloat16}, written without a branch (the NaN case is
     * selected with a mask); max/min keep the chosen operand's own bits.
     */
    private static void bf16(Scratch s, boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        short[] x = s.shorts(0), y = s.shorts(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I16, a0 + 2 * done, x, 0, len);
            MemorySegment.copy(inc, I16, b0 + 2 * done, y, 0, len);
            switch (op) {
                case SUM -> {
                    for (int i = 0; i < len; i++) {
                        int bits = Float.floatToRawIntBits(Float.intBitsToFloat(x[i] << 16) + Float.intBitsToFloat(y[i] << 16));
                        int high = bits >>> 16;
                        int rounded = (bits + 0x7FFF + (high & 1)) >>> 16;
                        int nan = (0x7F800000 - (bits & 0x7FFFFFFF)) >> 31;    // -1 for a NaN, else 0
                        x[i] = (short) ((rounded & ~nan) | ((high | 0x40) & nan));
                    }
                }
                case MAX -> {
                    if (ring) {
                        for (int i = 0; i < len; i++) x[i] = Float.intBitsToFloat(x[i] << 16) < Float.intBitsToFloat(y[i] << 16) ? y[i] : x[i];
                    } else {
                        for (int i = 0; i < len; i++) x[i] = Float.intBitsToFloat(x[i] << 16) > Float.intBitsToFloat(y[i] << 16) ? x[i] : y[i];
                    }
                }
                case MIN -> {
                    if (ring) {
                        for (int i = 0; i < len; i++) x[i] = Float.intBitsToFloat(y[i] << 16) < Float.intBitsToFloat(x[i] << 16) ? y[i] : x[i];
                    } else {
                        for (int i = 0; i < len; i++) x[i] = Float.intBitsToFloat(x[i] << 16) < Float.intBitsToFloat(y[i] << 16) ? x[i] : y[i];
                    }
                }
            }
            MemorySegment.copy(x, 0, acc, I16, a0 + 2 * done, len);
        }
    }

    /**
     * float16 through the JDK's conversion intrinsics. (The Vector API has no float16 lanes, so
     * this is also the kernel when the module is present; reading the segment directly instead of
     * staging through short[] ran about 30 times slower, measured on JDK 25.)
     */
    private static void f16(Scratch s, boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        short[] x = s.shorts(0), y = s.shorts(1);
        for (long done = 0; done < n; done += CHUNK) {
            int len = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(acc, I16, a0 + 2 * done, x, 0, len);
            MemorySegment.copy(inc, I16, b0 + 2 * done, y, 0, len);
            switch (op) {
                case SUM -> {
                    for (int i = 0; i < len; i++) {
                        x[i] = Float.floatToFloat16(Float.float16ToFloat(x[i]) + Float.float16ToFloat(y[i]));
                    }
                    // A second, branch-free pass canonicalises NaNs (see ScalarReducer.toHalf); one loop with
                    // the NaN test inside would not vectorise.
                    for (int i = 0; i < len; i++) {
                        x[i] = (x[i] & 0x7FFF) > 0x7C00 ? (short) 0x7E00 : x[i];
                    }
                }
                // max/min pick one operand; half -> float -> half is the identity, so keep the bits.
                case MAX -> {
                    if (ring) {
                        for (int i = 0; i < len; i++) if (Float.float16ToFloat(x[i]) < Float.float16ToFloat(y[i])) x[i] = y[i];
                    } else {
                        for (int i = 0; i < len; i++) if (!(Float.float16ToFloat(x[i]) > Float.float16ToFloat(y[i]))) x[i] = y[i];
                    }
                }
                case MIN -> {
                    if (ring) {
                        for (int i = 0; i < len; i++) if (Float.float16ToFloat(y[i]) < Float.float16ToFloat(x[i])) x[i] = y[i];
                    } else {
                        for (int i = 0; i < len; i++) if (!(Float.float16ToFloat(x[i]) < Float.float16ToFloat(y[i]))) x[i] = y[i];
                    }
                }
            }
            MemorySegment.copy(x, 0, acc, I16, a0 + 2 * done, len);
        }
    }

    /** One thread's staging arrays, two per element type ({@code acc} and {@code inc}), made on first use. */
    private static final class Scratch {
        private final byte[][] bytes = new byte[2][];
        private final short[][] shorts = new short[2][];
        private final int[][] ints = new int[2][];
        private final long[][] longs = new long[2][];
        private final float[][] floats = new float[2][];
        private final double[][] doubles = new double[2][];

        byte[] bytes(int k) { return bytes[k] != null ? bytes[k] : (bytes[k] = new byte[CHUNK]); }
        short[] shorts(int k) { return shorts[k] != null ? shorts[k] : (shorts[k] = new short[CHUNK]); }
        int[] ints(int k) { return ints[k] != null ? ints[k] : (ints[k] = new int[CHUNK]); }
        long[] longs(int k) { return longs[k] != null ? longs[k] : (longs[k] = new long[CHUNK]); }
        float[] floats(int k) { return floats[k] != null ? floats[k] : (floats[k] = new float[CHUNK]); }
        double[] doubles(int k) { return doubles[k] != null ? doubles[k] : (doubles[k] = new double[CHUNK]); }
    }
}
