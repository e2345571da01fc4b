package dev.jdist.jaccl;

import dev.jdist.testing.LongTest;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Reducer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The mesh and ring algorithms over the in-memory fabric, for every op and dtype, many group sizes,
 * wire counts and sizes around every threshold (32 KiB, 65536 B, {@code 2·n·m} elements, frame
 * classes) and with uneven tails. Results are compared with a reference reduction: bitwise where the
 * association order is defined (mesh fully connected: rank order; ring: the chunk's ring order), and
 * with order-independent data where it is not (mesh reduce-scatter combines in arrival order).
 */
class JacclAlgorithmsTest {
    static final Duration TIMEOUT = Duration.ofSeconds(30);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    // ------------------------------------------------------------------ data

    /** Values whose sum/max/min does not depend on the order of combination. */
    static void fillOrderFree(MemorySegment seg, DType dt, long count, Random rnd) {
        for (long i = 0; i < count; i++) {
            long o = i * dt.itemSize();
            switch (dt) {
                case BOOL -> seg.set(ValueLayout.JAVA_BYTE, o, (byte) new int[]{0, 1, 1, 2, 255, 0}[rnd.nextInt(6)]);
                case INT8, UINT8 -> seg.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
                case INT16, UINT16 -> seg.set(I16, o, (short) rnd.nextInt());
                case INT32, UINT32 -> seg.set(I32, o, rnd.nextInt());
                case INT64, UINT64 -> seg.set(I64, o, rnd.nextLong());
                case FLOAT16 -> seg.set(I16, o, Float.floatToFloat16(rnd.nextInt(17) - 8));
                case BFLOAT16 -> seg.set(I16, o, (short) (Float.floatToIntBits(rnd.nextInt(33) - 16) >>> 16));
                case FLOAT32 -> seg.set(I32, o, Float.floatToIntBits(rnd.nextInt(2001) - 1000));
                case FLOAT64 -> seg.set(I64, o, Double.doubleToLongBits(rnd.nextInt(200001) - 100000));
                case COMPLEX64 -> {
                    seg.set(I32, o, Float.floatToIntBits(rnd.nextInt(7) - 3));
                    seg.set(I32, o + 4, Float.floatToIntBits(rnd.nextInt(2001) - 1000));
                }
            }
        }
    }

    /** Arbitrary values, including NaN, infinities and both zeros for the float types. */
    static void fillArbitrary(MemorySegment seg, DType dt, long count, Random rnd) {
        fillOrderFree(seg, dt, count, rnd);
        float[] specials = {Float.NaN, -0.0f, 0.0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1e-3f, 3.14159f, -2.5e4f};
        for (long i = 0; i < count; i++) {
            long o = i * dt.itemSize();
            float v = rnd.nextInt(4) == 0 ? specials[rnd.nextInt(specials.length)] : (float) rnd.nextGaussian() * 100;
            switch (dt) {
                case FLOAT16 -> seg.set(I16, o, Float.floatToFloat16(v));
                case BFLOAT16 -> seg.set(I16, o, dev.jdist.Array.floatToBfloat16(v));
                case FLOAT32 -> seg.set(I32, o, Float.floatToIntBits(v));
                case FLOAT64 -> seg.set(I64, o, Double.doubleToLongBits(rnd.nextInt(4) == 0 ? v : rnd.nextGaussian() * 1e6));
                case COMPLEX64 -> {
                    seg.set(I32, o, Float.floatToIntBits(rnd.nextInt(3) == 0 ? specials[rnd.nextInt(specials.length)] : rnd.nextInt(3)));
                    seg.set(I32, o + 4, Float.floatToIntBits(v));
                }
                default -> { }
            }
        }
    }

    /** Equal bytes, except that any two NaNs of a float type are equal (NaN payloads are not compared). */
    static void assertSameValues(MemorySegment actual, MemorySegment expected, DType dt, long count, String what) {
        for (long i = 0; i < count; i++) {
            long o = i * dt.itemSize();
            boolean same = switch (dt) {
                case FLOAT16 -> eqF(Float.float16ToFloat(actual.get(I16, o)), Float.float16ToFloat(expected.get(I16, o)));
                case BFLOAT16 -> eqF(Float.intBitsToFloat(actual.get(I16, o) << 16), Float.intBitsToFloat(expected.get(I16, o) << 16));
                case FLOAT32 -> eqF(Float.intBitsToFloat(actual.get(I32, o)), Float.intBitsToFloat(expected.get(I32, o)));
                case FLOAT64 -> {
                    double a = Double.longBitsToDouble(actual.get(I64, o)), e = Double.longBitsToDouble(expected.get(I64, o));
                    yield (Double.isNaN(a) && Double.isNaN(e)) || Double.doubleToLongBits(a) == Double.doubleToLongBits(e);
                }
                case COMPLEX64 -> eqF(Float.intBitsToFloat(actual.get(I32, o)), Float.intBitsToFloat(expected.get(I32, o)))
                        && eqF(Float.intBitsToFloat(actual.get(I32, o + 4)), Float.intBitsToFloat(expected.get(I32, o + 4)));
                default -> {
                    boolean eq = true;
                    for (int b = 0; b < dt.itemSize(); b++) eq &= actual.get(ValueLayout.JAVA_BYTE, o + b) == expected.get(ValueLayout.JAVA_BYTE, o + b);
                    yield eq;
                }
            };
            if (!same) {
                fail(what + ": element " + i + " of " + count + " differs: got " + hex(actual, o, dt.itemSize()) + ", expected " + hex(expected, o, dt.itemSize()));
            }
        }
    }

    static boolean eqF(float a, float e) {
        return (Float.isNaN(a) && Float.isNaN(e)) || Float.floatToIntBits(a) == Float.floatToIntBits(e);
    }

    static String hex(MemorySegment s, long o, int len) {
        StringBuilder b = new StringBuilder("0x");
        for (int i = len - 1; i >= 0; i--) b.append(String.format("%02x", s.get(ValueLayout.JAVA_BYTE, o + i)));
        return b.toString();
    }

    static MemorySegment[] inputs(Arena arena, int n, DType dt, long count, boolean arbitrary, long seed) {
        MemorySegment[] in = new MemorySegment[n];
        Random rnd = new Random(seed);
        for (int r = 0; r < n; r++) {
            in[r] = arena.allocate(Math.max(1, count * dt.itemSize()), 8);
            if (arbitrary) fillArbitrary(in[r], dt, count, rnd); else fillOrderFree(in[r], dt, count, rnd);
        }
        return in;
    }

    // ------------------------------------------------------------------ references

    /** Rank-order fold {@code op(...op(op(x0, x1), x2)..., x_{n-1})} with the JACCL rule. */
    static MemorySegment rankOrder(Arena arena, MemorySegment[] in, DType dt, long count, ReduceOp op) {
        MemorySegment acc = arena.allocate(Math.max(1, count * dt.itemSize()), 8);
        MemorySegment.copy(in[0], 0, acc, 0, count * dt.itemSize());
        for (int q = 1; q < in.length; q++) Reducer.reduce(Reducer.Rule.JACCL, op, dt, acc, 0, in[q], 0, count);
        return acc;
    }

    /** The JACCL ring's association: chunk j starts at rank j and travels in its direction, each rank computing op(own, received). */
    static MemorySegment ringOrder(Arena arena, MemorySegment[] in, DType dt, long count, ReduceOp op, int m) {
        int n = in.length, s = dt.itemSize();
        long bytes = count * s;
        boolean small = bytes <= 32768 || count < 2L * n * m;
        int dirs = small ? 1 : 2, wires = small ? 1 : m;
        long chunk = (count + n - 1) / n;
        long slice = (chunk + (long) dirs * wires - 1) / ((long) dirs * wires);
        MemorySegment out = arena.allocate(Math.max(1, bytes), 8);
        MemorySegment v = arena.allocate(8, 8);
        for (long e = 0; e < count; e++) {
            int j = (int) (e / chunk);
            int d = (int) ((e - j * chunk) / (wires * slice));
            MemorySegment.copy(in[j], e * s, v, 0, s);
            for (int step = 1; step < n; step++) {
                int q = Math.floorMod(d == 0 ? j + step : j - step, n);
                MemorySegment acc = arena.allocate(8, 8);
                MemorySegment.copy(in[q], e * s, acc, 0, s);
                Reducer.reduce(Reducer.Rule.JACCL, op, dt, acc, 0, v, 0, 1);
                MemorySegment.copy(acc, 0, v, 0, s);
            }
            MemorySegment.copy(v, 0, out, e * s, s);
        }
        return out;
    }

    // ------------------------------------------------------------------ cases

    /** Element counts around the thresholds for a group of n ranks with m wires and itemsize s. */
    static long[] sizes(int n, int m, int s, Random rnd) {
        long fc = 32768 / s;
        long[] base = {0, 1, 2, n - 1L, n + 1L, 2L * n * m - 1, 2L * n * m, 2L * n * m + 1, 4096 / s - 1, 4096 / s + 1,
                fc - 1, fc, fc + 1, (long) n * (fc / n + 3) + n - 1, 65536 / s + n + 1, 131072 / s - 1,
                100_000 + rnd.nextInt(1000)};
        return base;
    }

    static Stream<Arguments> groups() {
        return Stream.of(
                Arguments.of(2, 0), Arguments.of(3, 0), Arguments.of(4, 0), Arguments.of(5, 0), Arguments.of(8, 0),
                Arguments.of(2, 1), Arguments.of(3, 1), Arguments.of(4, 2), Arguments.of(5, 3), Arguments.of(2, 4), Arguments.of(3, 2));
    }

    /** The all-reduce's representative groups (mesh, one and several wires, n = 2..4); the rest run in the long tier. */
    static Stream<Arguments> allReduceGroups() {
        return Stream.of(Arguments.of(3, 0), Arguments.of(2, 1), Arguments.of(4, 2), Arguments.of(3, 2));
    }

    static Stream<Arguments> allReduceGroupsLongTier() {
        return Stream.of(Arguments.of(2, 0), Arguments.of(4, 0), Arguments.of(5, 0), Arguments.of(8, 0),
                Arguments.of(3, 1), Arguments.of(5, 3), Arguments.of(2, 4));
    }

    @LongTest
    @ParameterizedTest(name = "n={0} wires={1} (0 = mesh)")
    @MethodSource("allReduceGroupsLongTier")
    @Timeout(600)
    void allReduceEveryDtypeOpAndThresholdRestOfTheSweep(int n, int wires) throws Exception {
        allReduceEveryDtypeOpAndThreshold(n, wires);
    }

    @ParameterizedTest(name = "n={0} wires={1} (0 = mesh)")
    @MethodSource("allReduceGroups")
    @Timeout(600)
    void allReduceEveryDtypeOpAndThreshold(int n, int wires) throws Exception {
        Random rnd = new Random(1000L * n + wires);
        int m = Math.max(1, wires);
        try (RankHarness h = new RankHarness(n, wires, JacclConfig.QpMode.UC, TIMEOUT); Arena arena = Arena.ofShared()) {
            int caseNo = 0;
            for (DType dt : DType.values()) {
                long[] sizes = sizes(n, m, dt.itemSize(), rnd);
                for (int i = 0; i < sizes.length; i++) {
                    long count = sizes[i];
                    // spread ops and dtypes over the sizes; every (dtype, op) meets small and large paths
                    ReduceOp op = ReduceOp.values()[(i + dt.ordinal()) % 3];
                    if (count > 50_000 && (dt.ordinal() + n) % 3 != 0) continue; // keep the big cases affordable
                    boolean inPlace = (i + caseNo) % 4 == 0;
                    checkAllReduce(h, arena, dt, count, op, inPlace, 7919L * caseNo++ + n);
                }
            }
        }
    }

    static void checkAllReduce(RankHarness h, Arena arena, DType dt, long count, ReduceOp op, boolean inPlace, long seed) throws Exception {
        int n = h.n, s = dt.itemSize();
        long bytes = count * s;
        boolean definedOrder = h.wires > 0 || n <= 2 || bytes <= MeshCollectives.FULLY_CONNECTED_LIMIT;
        MemorySegment[] in = inputs(arena, n, dt, count, definedOrder, seed);
        MemorySegment expected = h.wires > 0 ? ringOrder(arena, in, dt, count, op, h.wires) : rankOrder(arena, in, dt, count, op);
        MemorySegment[] work = new MemorySegment[n];
        MemorySegment[] out = new MemorySegment[n];
        for (int r = 0; r < n; r++) {
            work[r] = arena.allocate(Math.max(1, bytes), 8);
            MemorySegment.copy(in[r], 0, work[r], 0, bytes);
            out[r] = inPlace ? work[r] : arena.allocate(Math.max(1, bytes), 8);
        }
        h.runAllOk((rank, c) -> {
            c.allReduce(work[rank], out[rank], dt, count, op);
            return null;
        });
        String what = (h.wires == 0 ? "mesh" : "ring m=" + h.wires) + " n=" + n + " all_" + op + " " + dt + " E=" + count + (inPlace ? " in place" : "");
        for (int r = 0; r < n; r++) {
            assertSameValues(out[r], expected, dt, count, what + " rank " + r);
            if (!inPlace) assertThat(work[r].asSlice(0, bytes).mismatch(in[r].asSlice(0, bytes))).as(what + ": input untouched").isEqualTo(-1);
        }
        for (int r = 1; r < n; r++) {
            assertThat(out[r].asSlice(0, bytes).mismatch(out[0].asSlice(0, bytes))).as(what + ": bitwise identical on every rank").isEqualTo(-1);
        }
    }

    @ParameterizedTest(name = "n={0} wires={1} (0 = mesh)")
    @MethodSource("groups")
    @Timeout(600)
    void allGatherEveryBlockComplete(int n, int wires) throws Exception {
        Random rnd = new Random(77L * n + wires);
        int m = Math.max(1, wires);
        long[] blockBytes = {0, 1, 3, 2L * m - 1, 2L * m + 1, 4095, 4096, 4097, 8193, 32767, 32769, 65536 + 17, 300_001, 1_100_003};
        try (RankHarness h = new RankHarness(n, wires, JacclConfig.QpMode.UC, TIMEOUT); Arena arena = Arena.ofShared()) {
            for (long b : blockBytes) {
                if (b > 100_000 && n > 4) continue;
                MemorySegment[] in = new MemorySegment[n];
                MemorySegment[] out = new MemorySegment[n];
                MemorySegment expected = arena.allocate(Math.max(1, n * b));
                for (int r = 0; r < n; r++) {
                    in[r] = arena.allocate(Math.max(1, b));
                    for (long i = 0; i < b; i++) in[r].set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
                    MemorySegment.copy(in[r], 0, expected, r * b, b);
                    out[r] = arena.allocate(Math.max(1, n * b));
                    out[r].fill((byte) 0x5A);
                }
                h.runAllOk((rank, c) -> {
                    c.allGather(in[rank], out[rank], b);
                    return null;
                });
                for (int r = 0; r < n; r++) {
                    assertThat(out[r].asSlice(0, n * b).mismatch(expected.asSlice(0, n * b)))
                            .as("%s n=%d all_gather of %d bytes, rank %d", wires == 0 ? "mesh" : "ring m=" + wires, n, b, r).isEqualTo(-1);
                }
            }
        }
    }

    @ParameterizedTest(name = "n={0} wires={1} (0 = mesh)")
    @MethodSource("groups")
    @Timeout(600)
    void sumScatterEveryDtype(int n, int wires) throws Exception {
        Random rnd = new Random(31L * n + wires);
        int m = Math.max(1, wires);
        try (RankHarness h = new RankHarness(n, wires, JacclConfig.QpMode.UC, TIMEOUT); Arena arena = Arena.ofShared()) {
            int caseNo = 0;
            for (DType dt : DType.values()) {
                int s = dt.itemSize();
                long[] chunks = {0, 1, 2L * m - 1, 2L * m, 2L * m + 1, 65536 / s - 1, 65536 / s, 65536 / s + 1, 4096 / s + 3, 70_001};
                for (long chunk : chunks) {
                    if (chunk > 20_000 && (dt.ordinal() + n) % 4 != 0) continue;
                    long total = n * chunk;
                    MemorySegment[] in = inputs(arena, n, dt, total, false, 13L * caseNo++ + n);
                    MemorySegment sum = rankOrder(arena, in, dt, total, ReduceOp.SUM);
                    MemorySegment[] out = new MemorySegment[n];
                    for (int r = 0; r < n; r++) out[r] = arena.allocate(Math.max(1, chunk * s), 8);
                    h.runAllOk((rank, c) -> {
                        c.sumScatter(in[rank], out[rank], dt, chunk);
                        return null;
                    });
                    for (int r = 0; r < n; r++) {
                        assertSameValues(out[r], sum.asSlice(r * chunk * s), dt, chunk,
                                (wires == 0 ? "mesh" : "ring m=" + wires) + " n=" + n + " sum_scatter " + dt + " C=" + chunk + " rank " + r);
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "n={0} wires={1} (0 = mesh)")
    @MethodSource("groups")
    @Timeout(300)
    void sendRecvBetweenNeighboursAndAnyPeer(int n, int wires) throws Exception {
        try (RankHarness h = new RankHarness(n, wires, JacclConfig.QpMode.UC, TIMEOUT); Arena arena = Arena.ofShared()) {
            List<int[]> pairs = new ArrayList<>();
            for (int r = 0; r < n; r++) pairs.add(new int[]{r, (r + 1) % n});     // to the right neighbour
            pairs.add(new int[]{1, 0});                                           // to the left neighbour
            if (wires == 0 && n > 2) pairs.add(new int[]{0, n / 2 + 1});          // mesh: any peer
            long[] sizes = {0, 1, 4096, 5000, 32769, 600_001};
            int k = 0;
            for (int[] pair : pairs) {
                long bytes = sizes[k++ % sizes.length];
                int src = pair[0], dst = pair[1];
                MemorySegment in = arena.allocate(Math.max(1, bytes));
                for (long i = 0; i < bytes; i++) in.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + src * 7));
                MemorySegment out = arena.allocate(Math.max(1, bytes));
                List<Object> res = h.runAll(r -> r == src || r == dst, (rank, c) -> {
                    if (rank == src) c.send(in, bytes, dst); else c.recv(out, bytes, src);
                    return "ok";
                }, 120);
                assertThat(res.get(src)).as("sender %d", src).isEqualTo("ok");
                assertThat(res.get(dst)).as("receiver %d", dst).isEqualTo("ok");
                assertThat(out.asSlice(0, bytes).mismatch(in.asSlice(0, bytes))).as("n=%d bytes=%d %d -> %d", n, bytes, src, dst).isEqualTo(-1);
            }
        }
    }

    @Test
    @Timeout(60)
    void ringRejectsNonNeighbours() throws Exception {
        try (RankHarness h = new RankHarness(5, 1, JacclConfig.QpMode.UC, TIMEOUT); Arena arena = Arena.ofShared()) {
            MemorySegment x = arena.allocate(8);
            List<Object> res = h.runAll(r -> r == 0, (rank, c) -> {
                c.send(x, 8, 2);
                return null;
            }, 30);
            assertThat(res.get(0)).isInstanceOf(dev.jdist.UnsupportedCollectiveException.class);
            assertThat(((Throwable) res.get(0)).getMessage()).contains("rank 2").contains("rank 4").contains("rank 1");
        }
    }

    @Test
    void frameClasses() {
        assertThat(Frames.classFor(0)).isZero();
        assertThat(Frames.classFor(8191)).isZero();
        assertThat(Frames.classFor(8192)).isEqualTo(1);
        assertThat(Frames.classFor(512 * 1024 - 1)).isEqualTo(6);
        assertThat(Frames.classFor(512 * 1024)).isEqualTo(7);
        assertThat(Frames.classFor(1L << 40)).isEqualTo(7);
        assertThat(Frames.size(7)).isEqualTo(512 * 1024);
        assertThat(Frames.wrId(2, 1, 5)).isEqualTo((2 << 16) | (1 << 8) | 5);
        assertThat(Frames.classFor(1 << 20, false)).as("macOS 26.2: always class 0").isZero();
        assertThat(Frames.largeFrames("Mac OS X", "26.2")).isFalse();
        assertThat(Frames.largeFrames("Mac OS X", "26.3")).isTrue();
        assertThat(Frames.largeFrames("Mac OS X", "27.0")).isTrue();
        assertThat(Frames.largeFrames("Linux", "6.18.44")).isTrue();
    }

}
