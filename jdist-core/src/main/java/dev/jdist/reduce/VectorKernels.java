package dev.jdist.reduce;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * {@link Reducer}'s kernels on the Vector API. Only {@link Reducer} refers to this class, and only
 * when {@link Kernels#vectorApi()} says the {@code jdk.incubator.vector} module is in the JVM, so a JVM
 * without the module never loads it. Each method reduces a prefix of whole vectors and returns its
 * length; {@link Reducer} finishes the tail with {@link ScalarReducer}.
 */
final class VectorKernels {
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Byte> BS = ByteVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> IS = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;

    private VectorKernels() {}

    /** Bits per vector, for {@link Kernels#describe()}. */
    static int vectorBits() { return FS.vectorBitSize(); }

    /**
     * Reduces the longest prefix the vector loops cover and returns its element count (0 when the
     * dtype/op has no vector kernel or a segment cannot be read by the Vector API).
     */
    static long reduce(boolean ring, ReduceOp op, DType dtype, MemorySegment acc, long accOffset,
                       MemorySegment inc, long incOffset, long count) {
        if (!vectorizable(acc) || !vectorizable(inc)) return 0;
        return switch (dtype) {
            case FLOAT32 -> f32(ring, op, acc, accOffset, inc, incOffset, count);
            case FLOAT64 -> f64(ring, op, acc, accOffset, inc, incOffset, count);
            case INT8 -> i8(op, false, acc, accOffset, inc, incOffset, count);
            case UINT8 -> i8(op, true, acc, accOffset, inc, incOffset, count);
            case INT16 -> i16(op, false, acc, accOffset, inc, incOffset, count);
            case UINT16 -> i16(op, true, acc, accOffset, inc, incOffset, count);
            case INT32 -> i32(op, false, acc, accOffset, inc, incOffset, count);
            case UINT32 -> i32(op, true, acc, accOffset, inc, incOffset, count);
            case INT64 -> i64(op, false, acc, accOffset, inc, incOffset, count);
            case UINT64 -> i64(op, true, acc, accOffset, inc, incOffset, count);
            case BOOL -> bool(op, acc, accOffset, inc, incOffset, count);
            // (re, im) pairs add like a float32 array twice as long; lane counts are even.
            case COMPLEX64 -> op == ReduceOp.SUM ? f32(true, op, acc, accOffset, inc, incOffset, 2 * count) / 2 : 0;
            case BFLOAT16 -> bf16(ring, op, acc, accOffset, inc, incOffset, count);
            // float16: no Vector API kernel; Reducer runs the portable one (the JDK's conversion intrinsics).
            case FLOAT16 -> 0;
        };
    }

    /** The Vector API reads native segments and heap segments over byte[] only. */
    private static boolean vectorizable(MemorySegment s) {
        return s.isNative() || s.heapBase().map(o -> o instanceof byte[]).orElse(true);
    }

    // Integer max/min: ties are equal values, so lanewise max/min match the scalar rule bit for bit.

    private static long f32(boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = FS.length();
        long bound = n - n % lanes;
        switch (op) {
            case SUM -> {
                for (long i = 0; i < bound; i += lanes) {
                    FloatVector x = FloatVector.fromMemorySegment(FS, acc, a0 + 4 * i, LE);
                    FloatVector y = FloatVector.fromMemorySegment(FS, inc, b0 + 4 * i, LE);
                    x.add(y).intoMemorySegment(acc, a0 + 4 * i, LE);
                }
            }
            case MAX -> {
                for (long i = 0; i < bound; i += lanes) {
                    FloatVector x = FloatVector.fromMemorySegment(FS, acc, a0 + 4 * i, LE);
                    FloatVector y = FloatVector.fromMemorySegment(FS, inc, b0 + 4 * i, LE);
                    // IEEE compares are false for NaN: ring keeps acc, JACCL takes inc.
                    FloatVector r = ring ? x.blend(y, x.compare(VectorOperators.LT, y))
                                         : y.blend(x, x.compare(VectorOperators.GT, y));
                    r.intoMemorySegment(acc, a0 + 4 * i, LE);
                }
            }
            case MIN -> {
                for (long i = 0; i < bound; i += lanes) {
                    FloatVector x = FloatVector.fromMemorySegment(FS, acc, a0 + 4 * i, LE);
                    FloatVector y = FloatVector.fromMemorySegment(FS, inc, b0 + 4 * i, LE);
                    FloatVector r = ring ? x.blend(y, y.compare(VectorOperators.LT, x))
                                         : y.blend(x, x.compare(VectorOperators.LT, y));
                    r.intoMemorySegment(acc, a0 + 4 * i, LE);
                }
            }
        }
        return bound;
    }

    private static long f64(boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = DS.length();
        long bound = n - n % lanes;
        switch (op) {
            case SUM -> {
                for (long i = 0; i < bound; i += lanes) {
                    DoubleVector x = DoubleVector.fromMemorySegment(DS, acc, a0 + 8 * i, LE);
                    DoubleVector y = DoubleVector.fromMemorySegment(DS, inc, b0 + 8 * i, LE);
                    x.add(y).intoMemorySegment(acc, a0 + 8 * i, LE);
                }
            }
            case MAX -> {
                for (long i = 0; i < bound; i += lanes) {
                    DoubleVector x = DoubleVector.fromMemorySegment(DS, acc, a0 + 8 * i, LE);
                    DoubleVector y = DoubleVector.fromMemorySegment(DS, inc, b0 + 8 * i, LE);
                    DoubleVector r = ring ? x.blend(y, x.compare(VectorOperators.LT, y))
                                          : y.blend(x, x.compare(VectorOperators.GT, y));
                    r.intoMemorySegment(acc, a0 + 8 * i, LE);
                }
            }
            case MIN -> {
                for (long i = 0; i < bound; i += lanes) {
                    DoubleVector x = DoubleVector.fromMemorySegment(DS, acc, a0 + 8 * i, LE);
                    DoubleVector y = DoubleVector.fromMemorySegment(DS, inc, b0 + 8 * i, LE);
                    DoubleVector r = ring ? x.blend(y, y.compare(VectorOperators.LT, x))
                                          : y.blend(x, x.compare(VectorOperators.LT, y));
                    r.intoMemorySegment(acc, a0 + 8 * i, LE);
                }
            }
        }
        return bound;
    }

    // One loop per operator: the operator must be a compile-time constant for the JIT to emit vector code.
    private static long i8(ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = BS.length();
        long bound = n - n % lanes;
        switch (op) {
            case SUM -> {
                for (long i = 0; i < bound; i += lanes) {
                    ByteVector x = ByteVector.fromMemorySegment(BS, acc, a0 + i, LE);
                    ByteVector y = ByteVector.fromMemorySegment(BS, inc, b0 + i, LE);
                    x.add(y).intoMemorySegment(acc, a0 + i, LE);
                }
            }
            case MAX -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    ByteVector x = ByteVector.fromMemorySegment(BS, acc, a0 + i, LE);
                    ByteVector y = ByteVector.fromMemorySegment(BS, inc, b0 + i, LE);
                    x.lanewise(VectorOperators.UMAX, y).intoMemorySegment(acc, a0 + i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    ByteVector x = ByteVector.fromMemorySegment(BS, acc, a0 + i, LE);
                    ByteVector y = ByteVector.fromMemorySegment(BS, inc, b0 + i, LE);
                    x.max(y).intoMemorySegment(acc, a0 + i, LE);
                }
                }
            }
            case MIN -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    ByteVector x = ByteVector.fromMemorySegment(BS, acc, a0 + i, LE);
                    ByteVector y = ByteVector.fromMemorySegment(BS, inc, b0 + i, LE);
                    x.lanewise(VectorOperators.UMIN, y).intoMemorySegment(acc, a0 + i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    ByteVector x = ByteVector.fromMemorySegment(BS, acc, a0 + i, LE);
                    ByteVector y = ByteVector.fromMemorySegment(BS, inc, b0 + i, LE);
                    x.min(y).intoMemorySegment(acc, a0 + i, LE);
                }
                }
            }
        }
        return bound;
    }

    // One loop per operator: the operator must be a compile-time constant for the JIT to emit vector code.
    private static long i16(ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = SS.length();
        long bound = n - n % lanes;
        switch (op) {
            case SUM -> {
                for (long i = 0; i < bound; i += lanes) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, acc, a0 + 2 * i, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, inc, b0 + 2 * i, LE);
                    x.add(y).intoMemorySegment(acc, a0 + 2 * i, LE);
                }
            }
            case MAX -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, acc, a0 + 2 * i, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, inc, b0 + 2 * i, LE);
                    x.lanewise(VectorOperators.UMAX, y).intoMemorySegment(acc, a0 + 2 * i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, acc, a0 + 2 * i, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, inc, b0 + 2 * i, LE);
                    x.max(y).intoMemorySegment(acc, a0 + 2 * i, LE);
                }
                }
            }
            case MIN -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, acc, a0 + 2 * i, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, inc, b0 + 2 * i, LE);
                    x.lanewise(VectorOperators.UMIN, y).intoMemorySegment(acc, a0 + 2 * i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, acc, a0 + 2 * i, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, inc, b0 + 2 * i, LE);
                    x.min(y).intoMemorySegment(acc, a0 + 2 * i, LE);
                }
                }
            }
        }
        return bound;
    }

    // One loop per operator: the operator must be a compile-time constant for the JIT to emit vector code.
    private static long i32(ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = IS.length();
        long bound = n - n % lanes;
        switch (op) {
            case SUM -> {
                for (long i = 0; i < bound; i += lanes) {
                    IntVector x = IntVector.fromMemorySegment(IS, acc, a0 + 4 * i, LE);
                    IntVector y = IntVector.fromMemorySegment(IS, inc, b0 + 4 * i, LE);
                    x.add(y).intoMemorySegment(acc, a0 + 4 * i, LE);
                }
            }
            case MAX -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    IntVector x = IntVector.fromMemorySegment(IS, acc, a0 + 4 * i, LE);
                    IntVector y = IntVector.fromMemorySegment(IS, inc, b0 + 4 * i, LE);
                    x.lanewise(VectorOperators.UMAX, y).intoMemorySegment(acc, a0 + 4 * i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    IntVector x = IntVector.fromMemorySegment(IS, acc, a0 + 4 * i, LE);
                    IntVector y = IntVector.fromMemorySegment(IS, inc, b0 + 4 * i, LE);
                    x.max(y).intoMemorySegment(acc, a0 + 4 * i, LE);
                }
                }
            }
            case MIN -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    IntVector x = IntVector.fromMemorySegment(IS, acc, a0 + 4 * i, LE);
                    IntVector y = IntVector.fromMemorySegment(IS, inc, b0 + 4 * i, LE);
                    x.lanewise(VectorOperators.UMIN, y).intoMemorySegment(acc, a0 + 4 * i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    IntVector x = IntVector.fromMemorySegment(IS, acc, a0 + 4 * i, LE);
                    IntVector y = IntVector.fromMemorySegment(IS, inc, b0 + 4 * i, LE);
                    x.min(y).intoMemorySegment(acc, a0 + 4 * i, LE);
                }
                }
            }
        }
        return bound;
    }

    // One loop per operator: the operator must be a compile-time constant for the JIT to emit vector code.
    private static long i64(ReduceOp op, boolean unsigned, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = LS.length();
        long bound = n - n % lanes;
        switch (op) {
            case SUM -> {
                for (long i = 0; i < bound; i += lanes) {
                    LongVector x = LongVector.fromMemorySegment(LS, acc, a0 + 8 * i, LE);
                    LongVector y = LongVector.fromMemorySegment(LS, inc, b0 + 8 * i, LE);
                    x.add(y).intoMemorySegment(acc, a0 + 8 * i, LE);
                }
            }
            case MAX -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    LongVector x = LongVector.fromMemorySegment(LS, acc, a0 + 8 * i, LE);
                    LongVector y = LongVector.fromMemorySegment(LS, inc, b0 + 8 * i, LE);
                    x.lanewise(VectorOperators.UMAX, y).intoMemorySegment(acc, a0 + 8 * i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    LongVector x = LongVector.fromMemorySegment(LS, acc, a0 + 8 * i, LE);
                    LongVector y = LongVector.fromMemorySegment(LS, inc, b0 + 8 * i, LE);
                    x.max(y).intoMemorySegment(acc, a0 + 8 * i, LE);
                }
                }
            }
            case MIN -> {
                if (unsigned) {
                for (long i = 0; i < bound; i += lanes) {
                    LongVector x = LongVector.fromMemorySegment(LS, acc, a0 + 8 * i, LE);
                    LongVector y = LongVector.fromMemorySegment(LS, inc, b0 + 8 * i, LE);
                    x.lanewise(VectorOperators.UMIN, y).intoMemorySegment(acc, a0 + 8 * i, LE);
                }
                } else {
                for (long i = 0; i < bound; i += lanes) {
                    LongVector x = LongVector.fromMemorySegment(LS, acc, a0 + 8 * i, LE);
                    LongVector y = LongVector.fromMemorySegment(LS, inc, b0 + 8 * i, LE);
                    x.min(y).intoMemorySegment(acc, a0 + 8 * i, LE);
                }
                }
            }
        }
        return bound;
    }

    /** Shorts with as many lanes as {@link #IS}: bfloat16 lanes widen to float32 lanes one to one. */
    private static final VectorSpecies<Short> HS =
            VectorSpecies.of(short.class, VectorShape.forBitSize(IntVector.SPECIES_PREFERRED.vectorBitSize() / 2));

    /**
     * bfloat16 via float32 lanes: widen (bits << 16); sums round back to nearest even with NaN kept
     * quiet, exactly as {@link dev.jdist.Array#floatToBfloat16}; max/min keep the chosen operand's bits.
     */
    private static long bf16(boolean ring, ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = HS.length();
        if (lanes != IS.length()) return 0;
        long bound = n - n % lanes;
        for (long i = 0; i < bound; i += lanes) {
            ShortVector xs = ShortVector.fromMemorySegment(HS, acc, a0 + 2 * i, LE);
            ShortVector ys = ShortVector.fromMemorySegment(HS, inc, b0 + 2 * i, LE);
            FloatVector x = widen(xs), y = widen(ys);
            if (op == ReduceOp.SUM) {
                IntVector bits = x.add(y).reinterpretAsInts();
                IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
                IntVector rounded = bits.add(high.and(1)).add(0x7FFF).lanewise(VectorOperators.LSHR, 16);
                IntVector out = rounded.blend(high.or(0x40), bits.reinterpretAsFloats().test(VectorOperators.IS_NAN).cast(IS));
                ((ShortVector) out.convertShape(VectorOperators.I2S, HS, 0)).intoMemorySegment(acc, a0 + 2 * i, LE);
            } else {
                // max/min pick one operand's bits, as MLX's half-type ternary does
                VectorMask<Float> takeInc = op == ReduceOp.MAX
                        ? (ring ? x.compare(VectorOperators.LT, y) : x.compare(VectorOperators.GT, y).not())
                        : (ring ? y.compare(VectorOperators.LT, x) : x.compare(VectorOperators.LT, y).not());
                xs.blend(ys, takeInc.cast(HS)).intoMemorySegment(acc, a0 + 2 * i, LE);
            }
        }
        return bound;
    }

    private static FloatVector widen(ShortVector v) {
        return ((IntVector) v.convertShape(VectorOperators.S2I, IS, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /** Any non-zero byte is true; results are written as 0/1. sum and max are OR, min is AND. */
    private static long bool(ReduceOp op, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
        int lanes = BS.length();
        long bound = n - n % lanes;
        ByteVector zero = ByteVector.zero(BS);
        boolean and = op == ReduceOp.MIN;
        for (long i = 0; i < bound; i += lanes) {
            VectorMask<Byte> x = ByteVector.fromMemorySegment(BS, acc, a0 + i, LE).compare(VectorOperators.NE, 0);
            VectorMask<Byte> y = ByteVector.fromMemorySegment(BS, inc, b0 + i, LE).compare(VectorOperators.NE, 0);
            zero.blend((byte) 1, and ? x.and(y) : x.or(y)).intoMemorySegment(acc, a0 + i, LE);
        }
        return bound;
    }
}
