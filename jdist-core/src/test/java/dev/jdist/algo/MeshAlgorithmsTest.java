package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mesh algorithms as pure schedules (docs/reference/collectives.md §10.4–§10.8), run in memory by {@link ScheduleSimulator}:
 * every rank's result equals, byte for byte, the value §10.4's reduction order defines (or the concatenation, for
 * all_gather), for all 14 dtypes, n = 2..16, sizes 0, 1, odd and around every segment boundary.
 */
class MeshAlgorithmsTest {

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
    void allReduceAlgorithmsGiveTheDocumentedBytes(int n) {
        List<String> bad = new ArrayList<>();
        Random rnd = new Random(n);
        for (DType t : DType.values()) {
            for (long e : MeshChecks.sizes(n)) {
                MemorySegment[] inputs = MeshChecks.inputs(rnd, t, n, e);
                for (ReduceOp op : ReduceOp.values()) {
                    MemorySegment want = MeshChecks.reference(op, t, inputs, e);
                    for (String algo : List.of("rd", "rhd")) {
                        List<MeshSchedule> schedules = new ArrayList<>();
                        for (int r = 0; r < n; r++) {
                            schedules.add(algo.equals("rd") ? RecursiveDoubling.allReduce(r, n, e * t.itemSize())
                                    : HalvingDoubling.allReduce(r, n, e, t.itemSize()));
                        }
                        MemorySegment[] work = MeshChecks.copies(inputs);
                        ScheduleSimulator.run(schedules, work, op, t);
                        for (int r = 0; r < n; r++) {
                            if (work[r].mismatch(want) != -1) {
                                bad.add(algo + " " + op + " " + t + " E=" + e + " rank " + r + " differs at byte " + work[r].mismatch(want));
                            }
                        }
                    }
                }
            }
        }
        assertThat(bad).isEmpty();
    }

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
    void sumScatterByRecursiveHalvingGivesEachRankItsChunk(int n) {
        List<String> bad = new ArrayList<>();
        Random rnd = new Random(100 + n);
        for (DType t : DType.values()) {
            for (long c : new long[] {0, 1, 2, 3, 5, 17}) {
                MemorySegment[] inputs = MeshChecks.inputs(rnd, t, n, c * n);
                MemorySegment want = MeshChecks.reference(ReduceOp.SUM, t, inputs, c * n);
                List<MeshSchedule> schedules = new ArrayList<>();
                for (int r = 0; r < n; r++) schedules.add(RecursiveHalving.sumScatter(r, n, c * t.itemSize()));
                MemorySegment[] work = MeshChecks.copies(inputs);
                ScheduleSimulator.run(schedules, work, ReduceOp.SUM, t);
                long chunk = c * t.itemSize();
                for (int r = 0; r < n; r++) {
                    if (work[r].asSlice(r * chunk, chunk).mismatch(want.asSlice(r * chunk, chunk)) != -1) {
                        bad.add(t + " C=" + c + " rank " + r);
                    }
                }
            }
        }
        assertThat(bad).isEmpty();
    }

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
    void allGatherAlgorithmsDeliverEveryBlock(int n) {
        List<String> bad = new ArrayList<>();
        for (long bytes : new long[] {0, 1, 3, 8, 13, 1000}) {
            for (String algo : List.of("rd", "bruck")) {
                MemorySegment[] work = new MemorySegment[n];
                MemorySegment want = Arena.ofAuto().allocate(Math.max(1, n * bytes)).asSlice(0, n * bytes);
                for (int q = 0; q < n; q++) {
                    for (long i = 0; i < bytes; i++) want.set(ValueLayout.JAVA_BYTE, q * bytes + i, (byte) (q * 31 + i * 7 + 1));
                }
                List<MeshSchedule> schedules = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    work[r] = Arena.ofAuto().allocate(Math.max(1, n * bytes)).asSlice(0, n * bytes);
                    work[r].fill((byte) 0xEE);
                    MemorySegment.copy(want, r * bytes, work[r], r * bytes, bytes);
                    schedules.add(algo.equals("rd") ? RecursiveDoubling.allGather(r, n, bytes) : Bruck.allGather(r, n, bytes));
                }
                ScheduleSimulator.run(schedules, work, ReduceOp.SUM, DType.UINT8);
                for (int r = 0; r < n; r++) {
                    if (work[r].mismatch(want) != -1) bad.add(algo + " bytes=" + bytes + " rank " + r);
                }
            }
        }
        assertThat(bad).isEmpty();
    }

    @Test
    void associationOrderIsTheDocumentedTree() {
        // §10.4's example: float32, where adding 1 to 1e8 is lost, so the bracketing shows in the result
        float[][] four = {{1e8f}, {1f}, {-1e8f}, {1f}};
        // (x0 + x1) + (x2 + x3) = 1e8 + (-1e8) = 0; the ring (§3.6.4) gives x1 + (x2 + (x3 + x0)) = 1 + (-1e8 + 1e8) = 1
        assertThat(allSum(four, "rd")).containsOnly(0f);
        assertThat(allSum(four, "rhd")).containsOnly(0f);
        float[][] three = {{1e8f}, {-1e8f}, {1f}};
        // the pair (0, 1) folds first: (x0 + x1) + x2 = 1
        assertThat(allSum(three, "rd")).containsOnly(1f);
        float[][] five = {{1f}, {1e8f}, {-1e8f}, {1f}, {1f}};
        // pair (0, 1) folds: leaves (x0+x1), x2, x3, x4 → ((x0+x1) + x2) + (x3 + x4) = (1e8 - 1e8) + 2 = 2
        assertThat(allSum(five, "rd")).containsOnly(2f);
        assertThat(allSum(five, "rhd")).containsOnly(2f);
    }

    /** all_sum of one float32 per rank with {@code algo}: every rank's result. */
    private static List<Float> allSum(float[][] values, String algo) {
        int n = values.length;
        MemorySegment[] work = new MemorySegment[n];
        List<MeshSchedule> schedules = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            work[r] = Array.fromFloats(values[r], values[r].length).segment();
            schedules.add(algo.equals("rd") ? RecursiveDoubling.allReduce(r, n, 4L * values[r].length)
                    : HalvingDoubling.allReduce(r, n, values[r].length, 4));
        }
        ScheduleSimulator.run(schedules, work, ReduceOp.SUM, DType.FLOAT32);
        List<Float> out = new ArrayList<>();
        for (MemorySegment w : work) out.add(w.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
        return out;
    }

    @Test
    void roundsAndPeers() {
        // recursive doubling: log2 n rounds with n a power of two, two more with a fold
        assertThat(RecursiveDoubling.allReduce(5, 8, 4).steps()).hasSize(3);
        assertThat(RecursiveDoubling.allReduce(5, 8, 4).peers()).containsExactly(1, 4, 7);
        assertThat(RecursiveDoubling.allReduce(1, 6, 4).steps()).hasSize(4);     // fold in, 2 rounds, send back
        assertThat(RecursiveDoubling.allReduce(0, 6, 4).steps()).hasSize(2);     // folded out: hand over, get back
        assertThat(RecursiveDoubling.allReduce(5, 6, 4).peers()).containsExactly(3, 4);   // virtual 3: partners v2 (rank 4), v1 (rank 3)
        // Bruck: ceil(log2 n) rounds for every n
        for (int n = 2; n <= 16; n++) {
            int rounds = 32 - Integer.numberOfLeadingZeros(n - 1);
            for (int r = 0; r < n; r++) assertThat(Bruck.allGather(r, n, 8).steps()).hasSize(rounds);
        }
        // Rabenseifner: 2 log2 m rounds, about 2N bytes sent
        MeshSchedule rhd = HalvingDoubling.allReduce(3, 8, 1 << 20, 4);
        assertThat(rhd.steps()).hasSize(6);
        assertThat(rhd.sendBytes()).isEqualTo(2L * (4 << 20) * 7 / 8);
        assertThat(rhd.scratchBytes()).isEqualTo(2L << 20);
        // recursive halving: each rank sends (n-1)/n of the input
        MeshSchedule rh = RecursiveHalving.sumScatter(6, 8, 1000);
        assertThat(rh.steps()).hasSize(3);
        assertThat(rh.sendBytes()).isEqualTo(7000);
        assertThat(MeshSchedule.EMPTY.peers()).isEmpty();
        assertThat(RecursiveDoubling.allReduce(0, 3, 0)).isEqualTo(MeshSchedule.EMPTY);
    }

    @Test
    void foldMapsRanksInOrder() {
        Fold f = Fold.of(6);   // m = 4, two pairs: (0,1) → v0, (2,3) → v1, 4 → v2, 5 → v3
        assertThat(f.m()).isEqualTo(4);
        assertThat(f.extra()).isEqualTo(2);
        assertThat(new int[] {f.virtualOf(1), f.virtualOf(3), f.virtualOf(4), f.virtualOf(5)}).containsExactly(0, 1, 2, 3);
        assertThat(new int[] {f.realOf(0), f.realOf(1), f.realOf(2), f.realOf(3)}).containsExactly(1, 3, 4, 5);
        assertThat(new int[] {f.firstReal(0), f.firstReal(1), f.firstReal(2), f.firstReal(3), f.firstReal(4)})
                .containsExactly(0, 2, 4, 5, 6);
        assertThat(f.foldedOut(0)).isTrue();
        assertThat(f.foldedOut(4)).isFalse();
        assertThat(Fold.of(8).extra()).isZero();
    }

}
