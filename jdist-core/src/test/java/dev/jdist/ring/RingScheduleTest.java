package dev.jdist.ring;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.reduce.Reducer;
import dev.jdist.ring.RingSchedule.Item;
import dev.jdist.ring.RingSchedule.Part;
import dev.jdist.ring.RingSchedule.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The pure ring schedules against the reference's worked examples (docs/reference/collectives.md §3.6–§3.11, §9). */
class RingScheduleTest {

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Items as "[start,end)" byte ranges. */
    private static List<String> ranges(List<Item> items) {
        List<String> out = new ArrayList<>();
        for (Item it : items) out.add("[" + it.offset() + "," + (it.offset() + it.length()) + ")" + (it.reduce() ? "+" : ""));
        return out;
    }

    @Test
    void workedExample310ThreeRanksTenFloats() {
        // §3.10: N = 40, P = 1, connection 0, d = +1 (send on left[0], receive on right[0])
        String[][] sends = {
                {"[0,16)", "[16,32)", "[32,40)", "[0,16)"},
                {"[16,32)", "[32,40)", "[0,16)", "[16,32)"},
                {"[32,40)", "[0,16)", "[16,32)", "[32,40)"}};
        String[][] recvs = {
                {"[16,32)+", "[32,40)+", "[0,16)", "[16,32)"},
                {"[32,40)+", "[0,16)+", "[16,32)", "[32,40)"},
                {"[0,16)+", "[16,32)+", "[32,40)", "[0,16)"}};
        long[] totals = {56, 56, 48};
        for (int r = 0; r < 3; r++) {
            List<Stream> streams = RingSchedule.allReduce(r, 3, 1, 10, 4);
            assertThat(streams).hasSize(1);
            Stream s = streams.getFirst();
            assertThat(s.connection()).isZero();
            assertThat(s.sendOnLeft()).isTrue();
            assertThat(ranges(s.sends())).as("rank %d sends", r).containsExactly(sends[r]);
            assertThat(ranges(s.recvs())).as("rank %d receives", r).containsExactly(recvs[r]);
            assertThat(s.sendBytes()).isEqualTo(totals[r]);
        }
    }

    @Test
    void workedExample311SmallPathFourRanksThreeFloats() {
        int[][] elements = {{0, 3, 2, 1, 0, 3}, {1, 0, 3, 2, 1, 0}, {2, 1, 0, 3, 2, 1}, {3, 2, 1, 0, 3, 2}};
        for (int r = 0; r < 4; r++) {
            assertThat(RingSchedule.isSmallPath(3, 4)).isTrue();
            List<Stream> streams = RingSchedule.allReduce(r, 4, 2, 3, 4);
            assertThat(streams).hasSize(1);
            Stream s = streams.getFirst();
            assertThat(s.connection()).isZero();
            assertThat(s.sendOnLeft()).as("d = -1 sends on right[0]").isFalse();
            List<String> want = new ArrayList<>();
            for (int e : elements[r]) want.add("[" + e * 4 + "," + (e * 4 + 4) + ")");
            assertThat(ranges(s.sends())).containsExactlyElementsOf(want);
            assertThat(s.sendBytes()).isEqualTo(24);
        }
    }

    @Test
    void workedExample311TwoRanksTwoConnectionsFourMiB() {
        List<Part> parts = RingSchedule.allReduceParts(1_048_576, 4, 2, 2);
        assertThat(parts).containsExactly(
                new Part(0, 0, 262144, 0, +1), new Part(1, 262144, 262144, 0, -1),
                new Part(2, 524288, 262144, 1, +1), new Part(3, 786432, 262144, 1, -1));
        List<Stream> streams = RingSchedule.allReduce(0, 2, 2, 1_048_576, 4);
        assertThat(streams).hasSize(4);
        long seg = 131072 * 4;
        for (int i = 0; i < 4; i++) {
            Stream s = streams.get(i);
            long base = i * 262144L * 4;
            assertThat(s.connection()).isEqualTo(i / 2);
            assertThat(s.sendOnLeft()).isEqualTo(i % 2 == 0);
            // rank 0 writes S0 (partial) then the final S1 on every stream
            assertThat(s.sends()).containsExactly(new Item(base, seg, false), new Item(base + seg, seg, false));
        }
    }

    @Test
    void workedExample311AllGather() {
        long[][] blocks = {{0, 1}, {1, 2}, {2, 0}};
        for (int r = 0; r < 3; r++) {
            List<Stream> streams = RingSchedule.allGather(r, 3, 1, 8);
            assertThat(streams).hasSize(1);
            assertThat(streams.getFirst().sendOnLeft()).isTrue();
            assertThat(streams.getFirst().sends())
                    .containsExactly(new Item(blocks[r][0] * 8, 8, false), new Item(blocks[r][1] * 8, 8, false));
        }
        List<Stream> mib = RingSchedule.allGather(0, 2, 1, 1 << 20);
        assertThat(mib).hasSize(2);
        assertThat(mib.get(0).sendOnLeft()).isTrue();
        assertThat(mib.get(0).sends()).containsExactly(new Item(0, 512 * 1024, false));
        assertThat(mib.get(1).sendOnLeft()).isFalse();
        assertThat(mib.get(1).sends()).containsExactly(new Item(512 * 1024, 512 * 1024, false));
        assertThat(mib.get(1).recvs()).containsExactly(new Item((1 << 20) + 512 * 1024, 512 * 1024, false));
        assertThat(RingSchedule.allGather(0, 3, 2, 0)).isEmpty();
    }

    @Test
    void pointToPointSplit() {
        assertThat(RingSchedule.pointToPointSplit(1000, 2)).containsExactly(new long[] {0, 1000});
        assertThat(RingSchedule.pointToPointSplit(1500, 2)).containsExactly(new long[] {0, 1024}, new long[] {1024, 1500});
        assertThat(RingSchedule.pointToPointSplit(3000, 2)).containsExactly(new long[] {0, 1500}, new long[] {1500, 3000});
        assertThat(RingSchedule.pointToPointSplit(0, 2)).isEmpty();
        // n = 2: sends go on right, receives come in on left
        assertThat(RingSchedule.sendUsesRight(0, 2, 1)).isTrue();
        assertThat(RingSchedule.recvUsesLeft(0, 2, 1)).isTrue();
        assertThat(RingSchedule.sendUsesRight(1, 3, 0)).isFalse();
        assertThat(RingSchedule.recvUsesLeft(1, 3, 2)).isFalse();
        assertThatThrownBy(() -> RingSchedule.pointToPoint(0, 4, 1, 8, 2, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rank 0").hasMessageContaining("rank 2");
        assertThatThrownBy(() -> RingSchedule.pointToPoint(1, 4, 1, 8, 3, false))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rank 1").hasMessageContaining("rank 3");
    }

    @Test
    void smallPathLimit() {
        assertThatThrownBy(() -> RingSchedule.allReduce(0, 129, 1, 5, 8))
                .isInstanceOf(UnsupportedCollectiveException.class).hasMessageContaining("5 element").hasMessageContaining("129");
        assertThat(RingSchedule.allReduce(0, 128, 1, 5, 8)).hasSize(1);
        assertThat(RingSchedule.allReduce(0, 300, 1, 300, 8)).hasSize(1);   // E = n: not the small path
    }

    @Test
    void partCountRule() {
        assertThat(RingSchedule.allReducePartCount(40, 3, 1)).isEqualTo(1);
        assertThat(RingSchedule.allReducePartCount(1_572_864, 3, 1)).isEqualTo(2);
        assertThat(RingSchedule.allReducePartCount(1L << 30, 2, 3)).isEqualTo(6);
        assertThat(RingSchedule.allGatherPartCount(262143, 2)).isEqualTo(1);
        assertThat(RingSchedule.allGatherPartCount(3 * 262144, 1)).isEqualTo(2);
    }

    // ------------------------------------------------------------------ values: a byte-level simulation of the ring

    /** Runs the schedules of every rank in lock step over in-memory float32 buffers (sum). */
    static MemorySegment[] simulate(List<List<Stream>> perRank, MemorySegment[] work, DType dtype) {
        int n = perRank.size();
        int streams = perRank.getFirst().size();
        for (int si = 0; si < streams; si++) {
            Stream s0 = perRank.getFirst().get(si);
            int d = s0.direction();
            int items = Math.max(s0.sends().size(), s0.recvs().size());
            for (int i = 0; i < items; i++) {
                byte[][] payload = new byte[n][];
                for (int r = 0; r < n; r++) {
                    Item it = perRank.get(r).get(si).sends().get(i);
                    payload[r] = work[r].asSlice(it.offset(), it.length()).toArray(ValueLayout.JAVA_BYTE);
                }
                for (int r = 0; r < n; r++) {
                    Item it = perRank.get(r).get(si).recvs().get(i);
                    byte[] got = payload[Math.floorMod(r + d, n)];   // rank r receives what rank r+d sends
                    assertThat((long) got.length).isEqualTo(it.length());
                    MemorySegment in = MemorySegment.ofArray(got);
                    if (it.reduce()) {
                        Reducer.reduce(ReduceOp.SUM, dtype, work[r], it.offset(), in, 0, it.length() / dtype.itemSize());
                    } else {
                        MemorySegment.copy(in, 0, work[r], it.offset(), it.length());
                    }
                }
            }
        }
        return work;
    }

    private static float[] allSumFloat32(float[][] inputs, int k) {
        int n = inputs.length;
        int e = inputs[0].length;
        boolean small = RingSchedule.isSmallPath(e, n);
        int len = small ? n : e;
        MemorySegment[] work = new MemorySegment[n];
        List<List<Stream>> perRank = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            work[r] = Arena.ofAuto().allocate(4L * len);
            MemorySegment.copy(inputs[r], 0, work[r], F32, 0, e);
            perRank.add(RingSchedule.allReduce(r, n, k, e, 4));
        }
        simulate(perRank, work, DType.FLOAT32);
        float[] result = new float[e];
        MemorySegment.copy(work[0], F32, 0, result, 0, e);
        for (int r = 1; r < n; r++) {
            float[] other = new float[e];
            MemorySegment.copy(work[r], F32, 0, other, 0, e);
            assertThat(other).as("rank %d has the same bytes as rank 0", r).isEqualTo(result);
        }
        return result;
    }

    @Test
    void associationOrderExample() {
        float big = 1e8f;
        float[] r0 = {big, big, big}, r1 = {-big, -big, -big}, r2 = {1, 1, 1};
        assertThat(allSumFloat32(new float[][] {r0, r1, r2}, 1)).containsExactly(0f, 1f, 0f);
        assertThat(allSumFloat32(new float[][] {{big, big}, {-big, -big}, {1, 1}}, 1)).containsExactly(1f, 0f);

        int e = 393216;
        float[][] in = new float[3][e];
        for (int i = 0; i < e; i++) {
            in[0][i] = big;
            in[1][i] = -big;
            in[2][i] = 1;
        }
        float[] out = allSumFloat32(in, 1);
        for (int i = 0; i < e; i++) {
            float want = (i >= 65536 && i < 131072) || (i >= 196608 && i < 262144) ? 1f : 0f;
            if (out[i] != want) throw new AssertionError("element " + i + ": got " + out[i] + ", want " + want);
        }
    }

    @ParameterizedTest
    @CsvSource({"2,1,1", "3,1,10", "3,2,5", "4,2,3000000", "5,1,7", "4,1,0"})
    void sumScatterScheduleGivesEachRankItsChunk(int n, int k, int chunk) {
        MemorySegment[] work = new MemorySegment[n];
        List<List<Stream>> perRank = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            work[r] = Arena.ofAuto().allocate(Math.max(1, 4L * chunk * n));
            for (long i = 0; i < (long) chunk * n; i++) work[r].set(F32, 4 * i, (float) (r + 1) * (i % 1000));
            perRank.add(RingSchedule.sumScatter(r, n, k, chunk, 4));
        }
        simulate(perRank, work, DType.FLOAT32);
        float total = n * (n + 1) / 2f;
        for (int r = 0; r < n; r++) {
            for (long i = 0; i < chunk; i += Math.max(1, chunk / 1000)) {
                long gi = (long) r * chunk + i;
                assertThat(work[r].get(F32, 4 * gi)).as("rank %d element %d", r, i).isEqualTo(total * (gi % 1000));
            }
        }
    }

    @Test
    void sumScatterUsesSeveralPartsForLargeInputs() {
        List<Stream> s = RingSchedule.sumScatter(1, 2, 2, 1 << 20, 4);
        assertThat(s).hasSize(4);
        assertThat(s).extracting(Stream::connection).containsExactly(0, 0, 1, 1);
        assertThat(s).extracting(Stream::sendOnLeft).containsExactly(true, false, true, false);
        // rank 1, part 0 (d = +1): step 0 sends segment (1+1) mod 2 = 0, i.e. chunk 0's first quarter
        assertThat(s.getFirst().sends()).containsExactly(new Item(0, (1 << 18) * 4L, false));
        assertThat(s.getFirst().recvs()).containsExactly(new Item((1L << 20) * 4, (1 << 18) * 4L, true));
    }

    @Test
    void everyStreamUsesADistinctSocketDirection() {
        for (int k = 1; k <= 3; k++) {
            List<Stream> s = RingSchedule.allReduce(0, 2, k, 1 << 24, 4);
            assertThat(s).hasSize(2 * k);
            assertThat(s.stream().map(x -> x.connection() + "/" + x.sendOnLeft()).distinct()).hasSize(2 * k);
        }
    }

    // ------------------------------------------------------------------ the one-direction ring (§10.12)

    @Test
    void oneDirectionPartsTakeOneConnectionEachAllFlowingTheSameWay() {
        // P = max(1, min(k, floor(N / (n * 16384)))), part i on connection i, d = +1
        assertThat(RingSchedule.allReducePartCount(1L << 30, 2, 3, RingSchedule.ONE_DIRECTION)).isEqualTo(3);
        assertThat(RingSchedule.allReducePartCount(1_572_864, 3, 1, RingSchedule.ONE_DIRECTION)).isEqualTo(1);
        // a 1 MiB all_sum of 4 ranks on 2 connections (two network ports): 2 parts, where MLX's rule keeps 1
        assertThat(RingSchedule.allReducePartCount(1 << 20, 4, 2, RingSchedule.ONE_DIRECTION)).isEqualTo(2);
        assertThat(RingSchedule.allReducePartCount(1 << 20, 4, 2, RingSchedule.BOTH_DIRECTIONS)).isEqualTo(1);
        assertThat(RingSchedule.allReducePartCount(4 * 32_768 - 1, 4, 2, RingSchedule.ONE_DIRECTION)).isEqualTo(1);
        assertThat(RingSchedule.allReducePartCount(4 * 32_768, 4, 2, RingSchedule.ONE_DIRECTION)).isEqualTo(2);
        assertThat(RingSchedule.allGatherPartCount(32_767, 2, RingSchedule.ONE_DIRECTION)).isEqualTo(1);
        assertThat(RingSchedule.allGatherPartCount(32_768, 2, RingSchedule.ONE_DIRECTION)).isEqualTo(2);
        assertThat(RingSchedule.allReduceParts(1_048_576, 4, 2, 2, RingSchedule.ONE_DIRECTION))
                .containsExactly(new Part(0, 0, 524288, 0, +1), new Part(1, 524288, 524288, 1, +1));
        for (int k = 1; k <= 3; k++) {
            List<Stream> s = RingSchedule.allReduce(0, 2, k, RingSchedule.ONE_DIRECTION, 1 << 24, 4);
            assertThat(s).hasSize(k);
            assertThat(s).extracting(Stream::connection).doesNotHaveDuplicates();
            assertThat(s).allSatisfy(x -> assertThat(x.sendOnLeft()).isTrue());
            assertThat(RingSchedule.allGather(1, 3, k, RingSchedule.ONE_DIRECTION, 1 << 24)).hasSize(k)
                    .allSatisfy(x -> assertThat(x.sendOnLeft()).isTrue());
            assertThat(RingSchedule.sumScatter(1, 2, k, RingSchedule.ONE_DIRECTION, 1 << 22, 4)).hasSize(k)
                    .allSatisfy(x -> assertThat(x.sendOnLeft()).isTrue());
        }
        // one part: the two rings are the same schedule (and the small path is MLX's in both)
        for (int r = 0; r < 3; r++) {
            assertThat(RingSchedule.allReduce(r, 3, 2, RingSchedule.ONE_DIRECTION, 10, 4)).isEqualTo(RingSchedule.allReduce(r, 3, 2, 10, 4));
            assertThat(RingSchedule.allReduce(r, 3, 2, RingSchedule.ONE_DIRECTION, 2, 4)).isEqualTo(RingSchedule.allReduce(r, 3, 2, 2, 4));
        }
        assertThatThrownBy(() -> RingSchedule.allReduce(0, 2, 1, 3, 8, 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 or 2 directions");
    }

    /**
     * Both rings simulated over every dtype, n = 2..16 and sizes from one element to several parts, against the order
     * §3.6.4 writes down (MeshChecks.ringReference, computed from the formula, not from the schedule).
     */
    @ParameterizedTest(name = "n = {0}")
    @CsvSource({"2", "3", "4", "5", "6", "7", "8", "9", "12", "13", "16"})
    void bothRingsGiveTheDocumentedSumsForEveryDtype(int n) {
        java.util.Random rnd = new java.util.Random(n);
        for (DType t : DType.values()) {
            int s = t.itemSize();
            if ((long) n * s > RingSchedule.SMALL_PATH_LIMIT_BYTES) continue;
            List<Long> sizes = new ArrayList<>(List.of(1L, (long) n - 1, (long) n, 3L * n + 1, 1001L));
            if (n <= 4 && (t == DType.FLOAT32 || t == DType.BFLOAT16 || t == DType.FLOAT64)) {
                long unit = n * RingSchedule.MIN_PART_BYTES / s;
                long unit1 = n * 16_384L / s;   // §10.12's documented least part, not RingSchedule's constant
                sizes.add(2 * unit1 + 7);
                sizes.add(2 * unit + 7);
                sizes.add(4 * unit + 3);
            }
            for (long e : sizes) {
                if (e < 1) continue;
                for (int k = 1; k <= 2; k++) {
                    for (int directions : new int[] {RingSchedule.ONE_DIRECTION, RingSchedule.BOTH_DIRECTIONS}) {
                        MemorySegment[] x = dev.jdist.algo.MeshChecks.inputs(rnd, t, n, e);
                        MemorySegment want = dev.jdist.algo.MeshChecks.ringReference(ReduceOp.SUM, t, x, e, k, directions);
                        boolean small = RingSchedule.isSmallPath(e, n);
                        MemorySegment[] work = new MemorySegment[n];
                        List<List<Stream>> perRank = new ArrayList<>();
                        for (int r = 0; r < n; r++) {
                            work[r] = Arena.ofAuto().allocate((small ? n : e) * s);
                            MemorySegment.copy(x[r], 0, work[r], 0, e * s);
                            perRank.add(RingSchedule.allReduce(r, n, k, directions, e, s));
                        }
                        simulate(perRank, work, t);
                        for (int r = 0; r < n; r++) {
                            assertThat(work[r].asSlice(0, e * s).mismatch(want)).as("%s n=%d E=%d k=%d directions=%d rank %d", t, n, e, k,
                                    directions, r).isEqualTo(-1L);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "n = {0}, k = {1}, C = {2}")
    @CsvSource({"2,1,131077", "2,2,262145", "3,2,131077", "4,2,8195", "5,1,17", "7,3,131072", "16,1,9"})
    void bothRingsSumScatterInTheDocumentedOrder(int n, int k, long chunk) {
        java.util.Random rnd = new java.util.Random(chunk);
        for (int directions : new int[] {RingSchedule.ONE_DIRECTION, RingSchedule.BOTH_DIRECTIONS}) {
            MemorySegment[] x = dev.jdist.algo.MeshChecks.inputs(rnd, DType.FLOAT32, n, chunk * n);
            MemorySegment want = dev.jdist.algo.MeshChecks.ringScatterReference(DType.FLOAT32, x, chunk, k, directions);
            MemorySegment[] work = new MemorySegment[n];
            List<List<Stream>> perRank = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                work[r] = Arena.ofAuto().allocate(4L * chunk * n);
                MemorySegment.copy(x[r], 0, work[r], 0, 4L * chunk * n);
                perRank.add(RingSchedule.sumScatter(r, n, k, directions, chunk, 4));
            }
            simulate(perRank, work, DType.FLOAT32);
            for (int r = 0; r < n; r++) {
                assertThat(work[r].asSlice(4L * r * chunk, 4L * chunk).mismatch(want.asSlice(4L * r * chunk, 4L * chunk)))
                        .as("directions %d rank %d", directions, r).isEqualTo(-1L);
            }
        }
    }
}
