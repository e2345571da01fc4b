package dev.jdist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ArrayTest {

    @ParameterizedTest
    @EnumSource(DType.class)
    void everyDtypeHasItsItemSizeAndRoundTripsSmallIntegersThroughEveryAccessor(DType t) {
        Array a = Array.arange(t, 5);
        assertThat(a.nbytes()).isEqualTo(5L * t.itemSize());
        assertThat(a.segment().isNative()).isTrue();
        long[] expected = t == DType.BOOL ? new long[] {0, 1, 1, 1, 1} : new long[] {0, 1, 2, 3, 4};
        assertThat(a.toLongArray()).containsExactly(expected);
        assertThat(a.toDoubleArray()).containsExactly(java.util.Arrays.stream(expected).asDoubleStream().toArray());
        Array back = Array.fromBytes(t, a.toBytes(), 5);
        assertThat(Array.arrayEquals(a, back)).isTrue();
        assertThat(Array.arrayEquals(a, back.reshape(5, 1))).isFalse();
        assertThat(Array.arrayEquals(a.astype(DType.INT64), Array.fromLongs(expected, 5))).isTrue();
        assertThat(Array.arrayEquals(Array.fromLongs(t, expected, 5), a)).isTrue();
    }

    @Test
    void elementImagesAreLittleEndianAsOnTheWire() {
        assertThat(Array.fromInts(new int[] {0x01020304}, 1).toBytes()).containsExactly(4, 3, 2, 1);
        assertThat(Array.full(DType.FLOAT32, 1, 1).toBytes()).containsExactly(0, 0, (byte) 0x80, 0x3F);
        assertThat(Array.full(DType.FLOAT16, 1, 1).toBytes()).containsExactly(0, 0x3C);
        assertThat(Array.full(DType.BFLOAT16, 1, 1).toBytes()).containsExactly((byte) 0x80, 0x3F);
        Array c = Array.zeros(DType.COMPLEX64, 1);
        c.setComplex(0, 1f, -2f);
        assertThat(c.toBytes()).containsExactly(0, 0, (byte) 0x80, 0x3F, 0, 0, 0, (byte) 0xC0);
        assertThat(Array.fromBytes(DType.UINT16, new byte[] {(byte) 0xFF, (byte) 0xFF}, 1).getLong(0)).isEqualTo(65535);
    }

    @Test
    void javaArrayFactoriesAndExports() {
        assertThat(Array.of(1f, 2f).dtype()).isEqualTo(DType.FLOAT32);
        assertThat(Array.of(1.0, 2.0).toDoubleArray()).containsExactly(1.0, 2.0);
        assertThat(Array.of(1, 2, 3).toIntArray()).containsExactly(1, 2, 3);
        assertThat(Array.of(1L, -2L).toLongArray()).containsExactly(1L, -2L);
        assertThat(Array.of(true, false).toBooleanArray()).containsExactly(true, false);
        assertThat(Array.fromBooleans(new boolean[] {false, true}, 2).toBytes()).containsExactly(0, 1);
        assertThat(Array.fromFloats(new float[] {1, 2, 3, 4, 5, 6}, 2, 3).shape()).containsExactly(2, 3);
        assertThat(Array.fromDoubles(DType.INT8, new double[] {1.9, -1.9}, 2).toIntArray()).containsExactly(1, -1);
        assertThat(Array.fromShortBits(DType.FLOAT16, new short[] {0x3C00}, 1).getDouble(0)).isEqualTo(1.0);
        assertThat(Array.fromComplex(new float[] {1, 2}, 1).getImag(0)).isEqualTo(2f);
        assertThat(Array.fromInts(DType.UINT8, new int[] {256 + 7}, 1).getLong(0)).isEqualTo(7);
        assertThatThrownBy(() -> Array.fromFloats(new float[] {1, 2, 3}, 2, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3").hasMessageContaining("[2, 2]");
        assertThatThrownBy(() -> Array.fromBytes(DType.INT32, new byte[3], 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3 bytes").hasMessageContaining("4");
        assertThatThrownBy(() -> Array.zeros(DType.INT8, 2, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative");
    }

    @Test
    void zeroDimensionalAndEmptyArrays() {
        Array s = Array.scalar(DType.FLOAT32, 1.5);
        assertThat(s.ndim()).isZero();
        assertThat(s.size()).isEqualTo(1);
        assertThat(s.getDouble(0)).isEqualTo(1.5);
        Array e = Array.zeros(DType.INT32, 2, 0);
        assertThat(e.size()).isZero();
        assertThat(e.nbytes()).isZero();
        assertThat(e.copy().shape()).containsExactly(2, 0);
    }

    @Test
    void fullOnesAndZerosLike() {
        assertThat(Array.ones(DType.INT16, 3).toIntArray()).containsExactly(1, 1, 1);
        assertThat(Array.full(DType.UINT64, 18446744073709551615.0, 1).getLong(0)).isEqualTo(-1L);
        Array z = Array.zerosLike(Array.ones(DType.BFLOAT16, 2, 2));
        assertThat(z.dtype()).isEqualTo(DType.BFLOAT16);
        assertThat(z.shape()).containsExactly(2, 2);
        assertThat(z.toDoubleArray()).containsOnly(0.0);
    }

    @Test
    void reshapeSharesDataAndInfersMinusOne() {
        Array a = Array.arange(DType.INT32, 6);
        Array b = a.reshape(2, -1);
        assertThat(b.shape()).containsExactly(2, 3);
        b.setLong(5, 42);
        assertThat(a.getLong(5)).isEqualTo(42);
        assertThat(Array.arange(DType.INT32, 1).reshape().ndim()).isZero();
    }

    @Test
    void reshapeErrors() {
        Array a = Array.arange(DType.INT32, 6);
        assertThatThrownBy(() -> a.reshape(4, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[6]").hasMessageContaining("[4, 2]");
        assertThatThrownBy(() -> a.reshape(-1, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
        assertThatThrownBy(() -> a.reshape(4, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inferred");
    }

    @Test
    void copyIsDeep() {
        Array a = Array.arange(DType.FLOAT64, 3);
        Array c = a.copy();
        c.setDouble(0, 9);
        assertThat(a.getDouble(0)).isZero();
        assertThat(c.dtype()).isEqualTo(DType.FLOAT64);
    }

    @Test
    void wrapViewsCallerMemoryAndChecksItsSize() {
        MemorySegment seg = Arena.ofAuto().allocate(16);
        Array a = Array.wrap(seg, DType.INT32, 2, 2);
        a.setLong(3, 7);
        assertThat(seg.get(java.lang.foreign.ValueLayout.JAVA_INT, 12)).isEqualTo(7);
        assertThatThrownBy(() -> Array.wrap(seg, DType.INT32, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("16 bytes");
    }

    @Test
    void astypeConvertsLikeMlx() {
        Array f = Array.of(1.7f, -1.7f, 0f, 300f);
        assertThat(f.astype(DType.INT32).toIntArray()).containsExactly(1, -1, 0, 300);
        assertThat(f.astype(DType.BOOL).toBooleanArray()).containsExactly(true, true, false, true);
        assertThat(f.astype(DType.UINT8).toIntArray()).containsExactly(1, 255, 0, 44);
        // int64 -> float32 rounds once (2^53 + 1 would be lost twice through a double)
        long big = (1L << 60) + (1L << 36) + 1;
        assertThat(Array.of(big).astype(DType.FLOAT32).getDouble(0)).isEqualTo((double) (float) big);
        assertThat(Array.of(Long.MAX_VALUE).astype(DType.FLOAT64).getDouble(0)).isEqualTo(9.223372036854775807E18);
        Array u = Array.fromLongs(DType.UINT64, new long[] {-1L}, 1);
        assertThat(u.astype(DType.FLOAT64).getDouble(0)).isEqualTo(18446744073709551615.0);
        Array c = Array.fromComplex(new float[] {2.5f, 1f, 0f, 3f}, 2);
        assertThat(c.astype(DType.FLOAT32).toFloatArray()).containsExactly(2.5f, 0f);
        assertThat(c.astype(DType.BOOL).toBooleanArray()).containsExactly(true, true);
        assertThat(Array.of(3, 4).astype(DType.COMPLEX64).toComplexArray()).containsExactly(3f, 0f, 4f, 0f);
        assertThat(Array.of(1, 2).astype(DType.FLOAT16).toShortBits()).containsExactly((short) 0x3C00, (short) 0x4000);
        Array same = Array.of(1, 2);
        assertThat(same.astype(DType.INT32)).isNotSameAs(same);
    }

    @Test
    void halfPrecisionSettersRoundToNearestEvenWithoutDoubleRounding() {
        Array h = Array.zeros(DType.FLOAT16, 1);
        // 1 + 2^-11 is a tie: even -> 1.0 ; just above the tie (double) must round up to 1 + 2^-10
        h.setDouble(0, 1 + Math.pow(2, -11));
        assertThat(h.toShortBits()[0]).isEqualTo((short) 0x3C00);
        h.setDouble(0, 1 + Math.pow(2, -11) + Math.pow(2, -40)); // (float) of this is exactly the tie
        assertThat(h.toShortBits()[0]).isEqualTo((short) 0x3C01);
        h.setDouble(0, 1 + 3 * Math.pow(2, -11)); // tie between 0x3C01 and 0x3C02 -> even
        assertThat(h.toShortBits()[0]).isEqualTo((short) 0x3C02);
        h.setDouble(0, 70000);
        assertThat(h.getDouble(0)).isEqualTo(Double.POSITIVE_INFINITY);
        h.setDouble(0, Double.NaN);
        assertThat(h.getDouble(0)).isNaN();

        Array b = Array.zeros(DType.BFLOAT16, 1);
        b.setDouble(0, 1 + Math.pow(2, -8));
        assertThat(b.toShortBits()[0]).isEqualTo((short) 0x3F80);
        b.setDouble(0, 1 + Math.pow(2, -8) + Math.pow(2, -40));
        assertThat(b.toShortBits()[0]).isEqualTo((short) 0x3F81);
        b.setDouble(0, 1 + 3 * Math.pow(2, -8));
        assertThat(b.toShortBits()[0]).isEqualTo((short) 0x3F82);
        assertThat(Array.floatToBfloat16(Float.NaN)).isEqualTo((short) 0x7FC0);
        assertThat(Array.floatToBfloat16(-0f)).isEqualTo((short) 0x8000);
    }

    @Test
    void bfloat16RoundingMatchesAnExactReferenceOnRandomFloats() {
        Random rnd = new Random(5);
        for (int i = 0; i < 100_000; i++) {
            float f = Float.intBitsToFloat(rnd.nextInt());
            if (Float.isNaN(f)) continue;
            short b = Array.floatToBfloat16(f);
            float r = Array.bfloat16ToFloat(b);
            // the nearest of the two neighbours; on a tie the even one
            float down = Array.bfloat16ToFloat((short) (Float.floatToRawIntBits(f) >>> 16));
            int downBits = Float.floatToRawIntBits(f) >>> 16;
            float up = Array.bfloat16ToFloat((short) (downBits + 1));
            double dd = Math.abs((double) f - down), du = Math.abs((double) up - f);
            if (Float.isInfinite(up) && !Float.isInfinite(down)) du = Math.abs((double) Math.scalb(1f, 127) * 2 - f); // 2^128
            float want = dd < du ? down : du < dd ? up : ((downBits & 1) == 0 ? down : up);
            assertThat(Float.floatToRawIntBits(r)).as("f=%s", f).isEqualTo(Float.floatToRawIntBits(want));
        }
    }

    @Test
    void complexElements() {
        Array c = Array.zeros(DType.COMPLEX64, 2);
        c.setComplex(1, 3f, -4f);
        assertThat(c.getDouble(1)).isEqualTo(3.0);
        assertThat(c.getImag(1)).isEqualTo(-4f);
        c.setDouble(1, 5);
        assertThat(c.getImag(1)).isZero();
        assertThatThrownBy(() -> Array.zeros(DType.FLOAT32, 1).setComplex(0, 1, 1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void unsignedAccessorsAreUnsigned() {
        assertThat(Array.fromLongs(DType.UINT8, new long[] {-1}, 1).getLong(0)).isEqualTo(255);
        assertThat(Array.fromLongs(DType.UINT16, new long[] {-1}, 1).getDouble(0)).isEqualTo(65535);
        assertThat(Array.fromLongs(DType.UINT32, new long[] {-1}, 1).getLong(0)).isEqualTo(4294967295L);
        assertThat(Array.fromLongs(DType.UINT64, new long[] {-1}, 1).getDouble(0)).isEqualTo(18446744073709551615.0);
        assertThat(Array.fromLongs(DType.INT8, new long[] {255}, 1).getLong(0)).isEqualTo(-1);
    }
}
