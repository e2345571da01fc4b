package dev.jdist.reduce;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

class ReducerTest {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static final int[] LENGTHS = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 1000, 4099};

    /** The kernel sets this JVM can run: portable always, the Vector API ones when the module is present. */
    static List<Kernel> kernelSets() {
        return Kernels.vectorApi() ? List.of(Kernel.VECTOR, Kernel.PORTABLE) : List.of(Kernel.PORTABLE);
    }

    enum Kernel {
        VECTOR, PORTABLE;

        void reduce(Reducer.Rule rule, ReduceOp op, DType dtype, MemorySegment acc, long a0, MemorySegment inc, long b0, long n) {
            Reducer.reduce(this == VECTOR, rule, op, dtype, acc, a0, inc, b0, n);
        }
    }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (Kernel k : kernelSets())
            for (Reducer.Rule rule : Reducer.Rule.values())
                for (DType t : DType.values())
                    for (ReduceOp op : ReduceOp.values()) out.add(Arguments.of(k, rule, t, op));
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} {2} {3}")
    @MethodSource("cases")
    void kernelsGiveTheScalarReferenceBytes(Kernel kernel, Reducer.Rule rule, DType dtype, ReduceOp op) {
        Random rnd = new Random(31L * dtype.ordinal() + 7L * op.ordinal() + rule.ordinal());
        for (int n : LENGTHS) {
            for (int offsets = 0; offsets < 2; offsets++) {
                // offsets 1: unaligned byte offsets inside larger segments
                long accOff = offsets == 0 ? 0 : 3, incOff = offsets == 0 ? 0 : 5;
                byte[] a = randomElements(rnd, dtype, n), b = randomElements(rnd, dtype, n);
                MemorySegment accV = Arena.ofAuto().allocate(accOff + a.length + 8);
                MemorySegment accS = Arena.ofAuto().allocate(accOff + a.length + 8);
                MemorySegment inc = Arena.ofAuto().allocate(incOff + b.length + 8);
                MemorySegment.copy(a, 0, accV, ValueLayout.JAVA_BYTE, accOff, a.length);
                MemorySegment.copy(a, 0, accS, ValueLayout.JAVA_BYTE, accOff, a.length);
                MemorySegment.copy(b, 0, inc, ValueLayout.JAVA_BYTE, incOff, b.length);

                kernel.reduce(rule, op, dtype, accV, accOff, inc, incOff, n);
                ScalarReducer.reduce(rule, op, dtype, accS, accOff, inc, incOff, n);
                assertSameResults(dtype, op, accV.asSlice(accOff, a.length).toArray(ValueLayout.JAVA_BYTE),
                        accS.asSlice(accOff, a.length).toArray(ValueLayout.JAVA_BYTE),
                        rule + " " + dtype + " " + op + " n=" + n + " offsets=" + accOff + "/" + incOff);
                // bytes outside the range stay untouched
                for (long k = 0; k < accOff; k++) assertThat(accV.get(ValueLayout.JAVA_BYTE, k)).isZero();
                for (long k = accOff + a.length; k < accV.byteSize(); k++) assertThat(accV.get(ValueLayout.JAVA_BYTE, k)).isZero();

                // heap segments over byte[] take the vector path too
                byte[] heapAcc = a.clone();
                kernel.reduce(rule, op, dtype, MemorySegment.ofArray(heapAcc), 0, MemorySegment.ofArray(b), 0, n);
                byte[] expected = a.clone();
                ScalarReducer.reduce(rule, op, dtype, MemorySegment.ofArray(expected), 0, MemorySegment.ofArray(b), 0, n);
                assertSameResults(dtype, op, heapAcc, expected, rule + " " + dtype + " " + op + " heap n=" + n);
            }
        }
    }

    /** Bytes must match, except that two NaNs from a sum need not share payload bits (docs/reference/collectives.md §1.3). */
    private static void assertSameResults(DType dtype, ReduceOp op, byte[] got, byte[] want, String what) {
        if (op != ReduceOp.SUM || !(dtype.isFloatingPoint() || dtype == DType.COMPLEX64)) {
            assertThat(got).as(what).isEqualTo(want);
            return;
        }
        DType lane = dtype == DType.COMPLEX64 ? DType.FLOAT32 : dtype;
        Array g = Array.fromBytes(lane, got, got.length / lane.itemSize());
        Array w = Array.fromBytes(lane, want, want.length / lane.itemSize());
        for (int i = 0; i < g.size(); i++) {
            double x = g.getDouble(i), y = w.getDouble(i);
            if (Double.isNaN(x) && Double.isNaN(y)) continue;
            assertThat(Double.doubleToRawLongBits(x)).as(what + " element " + i).isEqualTo(Double.doubleToRawLongBits(y));
        }
    }

    private static byte[] randomElements(Random rnd, DType dtype, int n) {
        int s = dtype.itemSize();
        MemorySegment seg = MemorySegment.ofArray(new byte[n * s]);
        for (int i = 0; i < n; i++) {
            long off = (long) i * s;
            boolean special = rnd.nextInt(4) == 0;
            switch (dtype) {
                case BOOL -> seg.set(ValueLayout.JAVA_BYTE, off, (byte) (special ? pick(rnd, 2, 0x80, 0xFF, 1) : rnd.nextInt(2)));
                case INT8, UINT8 -> seg.set(ValueLayout.JAVA_BYTE, off, (byte) (special ? pick(rnd, 0, -1, 127, -128, 1) : rnd.nextInt()));
                case INT16, UINT16 -> seg.set(I16, off, (short) (special ? pick(rnd, 0, -1, 32767, -32768, 1) : rnd.nextInt()));
                case INT32, UINT32 -> seg.set(I32, off, special ? (int) pick(rnd, 0, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 1) : rnd.nextInt());
                case INT64, UINT64 -> seg.set(I64, off, special ? pick(rnd, 0, -1, Long.MAX_VALUE, Long.MIN_VALUE, 1) : rnd.nextLong());
                case FLOAT32 -> seg.set(I32, off, Float.floatToRawIntBits(randomFloat(rnd, special)));
                case COMPLEX64 -> {
                    // equal real parts are common so the imaginary tie-break is exercised
                    float re = rnd.nextInt(3) == 0 ? 1f : randomFloat(rnd, special);
                    seg.set(I32, off, Float.floatToRawIntBits(re));
                    seg.set(I32, off + 4, Float.floatToRawIntBits(randomFloat(rnd, rnd.nextInt(4) == 0)));
                }
                case FLOAT64 -> seg.set(I64, off, Double.doubleToRawLongBits(special
                        ? new double[] {Double.NaN, -Double.NaN, 0.0, -0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
                                        Double.MAX_VALUE, Double.MIN_VALUE, 1.0}[rnd.nextInt(9)]
                        : (rnd.nextDouble() - 0.5) * Math.pow(2, rnd.nextInt(40) - 20)));
                case FLOAT16 -> seg.set(I16, off, special ? (short) pick(rnd, 0x7E00, 0xFE00, 0x7C01, 0, 0x8000, 0x7C00, 0xFC00, 0x7BFF, 1)
                                                          : (short) rnd.nextInt());
                case BFLOAT16 -> seg.set(I16, off, special ? (short) pick(rnd, 0x7FC0, 0xFFC0, 0x7F81, 0, 0x8000, 0x7F80, 0xFF80, 0x7F7F, 1)
                                                           : (short) rnd.nextInt());
            }
        }
        return seg.toArray(ValueLayout.JAVA_BYTE);
    }

    private static float randomFloat(Random rnd, boolean special) {
        if (special) {
            return new float[] {Float.NaN, Float.intBitsToFloat(0xFFC00001), 0f, -0f, Float.POSITIVE_INFINITY,
                                Float.NEGATIVE_INFINITY, Float.MAX_VALUE, Float.MIN_VALUE, 1f}[rnd.nextInt(9)];
        }
        return (rnd.nextFloat() - 0.5f) * (float) Math.pow(2, rnd.nextInt(20) - 10);
    }

    private static long pick(Random rnd, long... values) { return values[rnd.nextInt(values.length)]; }

    @Test
    void segmentsOverNonByteArraysAreReducedToo() {
        for (Kernel k : kernelSets()) {
            float[] acc = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
            float[] inc = new float[17];
            java.util.Arrays.fill(inc, 1f);
            k.reduce(Reducer.Rule.RING, ReduceOp.SUM, DType.FLOAT32, MemorySegment.ofArray(acc), 0, MemorySegment.ofArray(inc), 0, 17);
            assertThat(acc[0]).as(k.name()).isEqualTo(2f);
            assertThat(acc[16]).as(k.name()).isEqualTo(18f);
        }
    }

    /** Chunk boundaries of the portable kernels' staging: counts just around multiples of the chunk. */
    @Test
    void portableKernelsAcrossStagingChunks() {
        Random rnd = new Random(5);
        int c = PortableKernels.CHUNK;
        for (int n : new int[] {c - 1, c, c + 1, 2 * c + 3}) {
            for (DType t : DType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    byte[] a = randomElements(rnd, t, n), b = randomElements(rnd, t, n);
                    byte[] got = a.clone(), want = a.clone();
                    Kernel.PORTABLE.reduce(Reducer.Rule.RING, op, t, MemorySegment.ofArray(got), 0, MemorySegment.ofArray(b), 0, n);
                    ScalarReducer.reduce(Reducer.Rule.RING, op, t, MemorySegment.ofArray(want), 0, MemorySegment.ofArray(b), 0, n);
                    assertSameResults(t, op, got, want, t + " " + op + " n=" + n);
                }
            }
        }
    }

    @Test
    void theKernelsInUseFollowTheVectorModule() {
        assertThat(Kernels.vectorApi()).isEqualTo(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent());
        assertThat(Kernels.describe()).contains(Kernels.vectorApi() ? "Vector API kernels" : "portable kernels");
        // The build runs this class twice, with and without the module (see jdist-core/pom.xml).
        String expected = System.getProperty("jdist.test.vectorModule");
        if (expected != null) assertThat(Kernels.vectorApi()).isEqualTo(Boolean.parseBoolean(expected));
    }

    // ------------------------------------------------------------- §1.3 semantics, stated directly, for each kernel set

    /** {@code acc op inc} with every kernel set; they must agree byte for byte. */
    private static Array reduce(Reducer.Rule rule, ReduceOp op, Array acc, Array inc) {
        Array first = null;
        for (Kernel k : kernelSets()) {
            Array out = acc.copy();
            k.reduce(rule, op, out.dtype(), out.segment(), 0, inc.segment(), 0, out.size());
            if (first == null) first = out;
            else assertThat(out.toBytes()).as(k + " vs " + kernelSets().get(0) + " " + rule + " " + op).isEqualTo(first.toBytes());
        }
        return first;
    }

    /** 33 copies so both the vector body and the scalar tail see the value. */
    private static Array filled(DType t, double v) { return Array.full(t, v, 33); }

    @Test
    void ringRuleKeepsANanAlreadyInAccAndDropsAnArrivingNan() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.MAX, ReduceOp.MIN}) {
                Array kept = reduce(Reducer.Rule.RING, op, filled(t, Double.NaN), filled(t, 1));
                Array dropped = reduce(Reducer.Rule.RING, op, filled(t, 1), filled(t, Double.NaN));
                for (int i = 0; i < 33; i++) {
                    assertThat(kept.getDouble(i)).as(t + " " + op).isNaN();
                    assertThat(dropped.getDouble(i)).as(t + " " + op).isEqualTo(1.0);
                }
            }
        }
    }

    @Test
    void jacclRuleIsTheMirrorImageForNan() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.MAX, ReduceOp.MIN}) {
                Array nanInAcc = reduce(Reducer.Rule.JACCL, op, filled(t, Double.NaN), filled(t, 1));
                Array nanInInc = reduce(Reducer.Rule.JACCL, op, filled(t, 1), filled(t, Double.NaN));
                for (int i = 0; i < 33; i++) {
                    assertThat(nanInAcc.getDouble(i)).as(t + " " + op).isEqualTo(1.0);
                    assertThat(nanInInc.getDouble(i)).as(t + " " + op).isNaN();
                }
            }
        }
    }

    @Test
    void signedZeroTiesKeepAccUnderTheRingRuleAndTakeIncUnderJaccl() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.MAX, ReduceOp.MIN}) {
                Array ring = reduce(Reducer.Rule.RING, op, filled(t, 0.0), filled(t, -0.0));
                Array jaccl = reduce(Reducer.Rule.JACCL, op, filled(t, 0.0), filled(t, -0.0));
                for (int i = 0; i < 33; i++) {
                    assertThat(1 / ring.getDouble(i)).as("ring " + t + " " + op).isEqualTo(Double.POSITIVE_INFINITY);
                    assertThat(1 / jaccl.getDouble(i)).as("jaccl " + t + " " + op).isEqualTo(Double.NEGATIVE_INFINITY);
                }
            }
        }
    }

    @Test
    void boolSumAndMaxAreOrMinIsAndAnyNonZeroByteIsTrueAndResultsAreZeroOrOne() {
        byte[] a = new byte[40], b = new byte[40];
        for (int i = 0; i < 40; i++) {
            a[i] = (byte) new int[] {0, 0, 2, 0x80}[i % 4];
            b[i] = (byte) new int[] {0, 0xFF, 0, 7}[i % 4];
        }
        Array x = Array.fromBytes(DType.BOOL, a, 40), y = Array.fromBytes(DType.BOOL, b, 40);
        for (ReduceOp op : ReduceOp.values()) {
            byte[] r = reduce(Reducer.Rule.RING, op, x, y).toBytes();
            for (int i = 0; i < 40; i++) {
                int expected = op == ReduceOp.MIN ? (i % 4 == 3 ? 1 : 0) : (i % 4 == 0 ? 0 : 1);
                assertThat(r[i]).as(op + " element " + i).isEqualTo((byte) expected);
            }
        }
    }

    @Test
    void integerSumsWrapAndUnsignedTypesCompareUnsigned() {
        assertThat(reduce(Reducer.Rule.RING, ReduceOp.SUM, filled(DType.INT8, 127), filled(DType.INT8, 1)).getLong(32)).isEqualTo(-128);
        assertThat(reduce(Reducer.Rule.RING, ReduceOp.SUM, filled(DType.UINT8, 255), filled(DType.UINT8, 1)).getLong(32)).isZero();
        assertThat(reduce(Reducer.Rule.RING, ReduceOp.SUM, filled(DType.INT64, Long.MAX_VALUE), filled(DType.INT64, 1)).getLong(0))
                .isEqualTo(Long.MIN_VALUE);
        for (DType t : new DType[] {DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64}) {
            Array big = Array.zeros(t, 33), one = Array.zeros(t, 33);
            for (int i = 0; i < 33; i++) { big.setLong(i, -1L); one.setLong(i, 1); }
            Array max = reduce(Reducer.Rule.RING, ReduceOp.MAX, one, big);
            Array min = reduce(Reducer.Rule.RING, ReduceOp.MIN, big, one);
            for (int i = 0; i < 33; i++) {
                assertThat(max.getLong(i)).as(t + " max").isEqualTo(big.getLong(i));
                assertThat(min.getLong(i)).as(t + " min").isEqualTo(1);
            }
        }
        for (DType t : new DType[] {DType.INT8, DType.INT16, DType.INT32, DType.INT64}) {
            Array max = reduce(Reducer.Rule.RING, ReduceOp.MAX, filled(t, -1), filled(t, 1));
            Array min = reduce(Reducer.Rule.RING, ReduceOp.MIN, filled(t, 1), filled(t, -1));
            assertThat(max.getLong(32)).as(t + " max").isEqualTo(1);
            assertThat(min.getLong(32)).as(t + " min").isEqualTo(-1);
        }
    }

    @Test
    void complexMaxAndMinAreLexicographicAndSumIsPerPart() {
        Array acc = Array.fromComplex(new float[] {1, 5, 1, 2, 3, 0, 1, 2}, 4);
        Array inc = Array.fromComplex(new float[] {1, 6, 1, 1, 2, 9, 1, 2}, 4);
        assertThat(reduce(Reducer.Rule.RING, ReduceOp.MAX, acc, inc).toComplexArray())
                .containsExactly(1, 6, 1, 2, 3, 0, 1, 2);
        assertThat(reduce(Reducer.Rule.RING, ReduceOp.MIN, acc, inc).toComplexArray())
                .containsExactly(1, 5, 1, 1, 2, 9, 1, 2);
        assertThat(reduce(Reducer.Rule.RING, ReduceOp.SUM, acc, inc).toComplexArray())
                .containsExactly(2, 11, 2, 3, 5, 9, 2, 4);
    }

    @Test
    void halfPrecisionStepsRoundToNearestEven() {
        // float16: 1 + 2^-11 is a tie between 1 and 1+2^-10 -> 1 (even); (1+2^-10) + 2^-11 -> 1+2^-9... (even 0x3C02)
        Array h = reduce(Reducer.Rule.RING, ReduceOp.SUM,
                Array.fromShortBits(DType.FLOAT16, new short[] {0x3C00, 0x3C01}, 2),
                Array.fromShortBits(DType.FLOAT16, new short[] {0x1000, 0x1000}, 2));
        assertThat(h.toShortBits()).containsExactly((short) 0x3C00, (short) 0x3C02);
        // bfloat16: 1 + 2^-8 ties to 1; (1+2^-7) + 2^-8 ties to 1+2^-6 (even)
        Array b = reduce(Reducer.Rule.RING, ReduceOp.SUM,
                Array.fromShortBits(DType.BFLOAT16, new short[] {0x3F80, 0x3F81}, 2),
                Array.fromShortBits(DType.BFLOAT16, new short[] {0x3B80, 0x3B80}, 2));
        assertThat(b.toShortBits()).containsExactly((short) 0x3F80, (short) 0x3F82);
        // float16 overflow goes to infinity
        Array inf = reduce(Reducer.Rule.RING, ReduceOp.SUM, Array.full(DType.FLOAT16, 65504, 1), Array.full(DType.FLOAT16, 65504, 1));
        assertThat(inf.getDouble(0)).isEqualTo(Double.POSITIVE_INFINITY);
    }

    @Test
    void float16SumsThatAreNanAreTheOneCanonicalQuietNanSoRanksAgreeOnBytes() {
        short[] a = new short[2100], b = new short[2100];
        for (int i = 0; i < a.length; i++) {
            a[i] = (short) (i % 2 == 0 ? 0x7C00 : 0x7C01);   // +inf, signalling NaN
            b[i] = (short) (i % 2 == 0 ? 0xFC00 : 0x3C00);   // -inf, 1
        }
        Array sum = reduce(Reducer.Rule.RING, ReduceOp.SUM, Array.fromShortBits(DType.FLOAT16, a, a.length),
                Array.fromShortBits(DType.FLOAT16, b, b.length));
        assertThat(sum.toShortBits()).containsOnly((short) 0x7E00);
    }

    @Test
    void reducesOnlyTheRequestedRange() {
        Array acc = Array.arange(DType.INT32, 10), inc = Array.full(DType.INT32, 100, 10);
        Reducer.reduce(ReduceOp.SUM, DType.INT32, acc.segment(), 8, inc.segment(), 0, 3);
        assertThat(acc.toIntArray()).containsExactly(0, 1, 102, 103, 104, 5, 6, 7, 8, 9);
    }
}
