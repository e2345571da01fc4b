package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hierarchical algorithms as pure schedules (docs/reference/collectives.md §10.11), run in memory by {@link ScheduleSimulator}
 * on many host layouts (ranks in blocks per host, even and uneven, interleaved, one host, one rank per host): every
 * rank's result equals, byte for byte, §10.11's value (all 14 dtypes, n = 2..16, sizes 0, 1, odd and around the stripe
 * boundaries), and the messages between hosts are only those of the stripe owners.
 */
class HierarchicalTest {

    /** Host layouts worth trying for n ranks, by name. */
    static Map<String, HostLayout> layouts(int n) {
        Map<String, HostLayout> out = new LinkedHashMap<>();
        for (int per : new int[] {2, 3, 4}) {
            if (per >= n) continue;
            int[] h = new int[n];
            for (int q = 0; q < n; q++) h[q] = q / per;
            out.put(per + " per host in blocks" + (n % per == 0 ? "" : " (uneven)"), HostLayout.ofHosts(h));
        }
        for (int hosts : new int[] {2, 3}) {
            if (hosts >= n) continue;
            int[] h = new int[n];
            for (int q = 0; q < n; q++) h[q] = q % hosts;
            out.put(hosts + " hosts interleaved", HostLayout.ofHosts(h));
        }
        out.put("one host", HostLayout.ofHosts(new int[n]));
        out.put("one rank per host", HostLayout.separate(n));
        return out;
    }

    private static final List<Algorithm> ALGORITHMS = List.of(Algorithm.HIER, Algorithm.HIER_LEADER);

    /**
     * n = 2, 3, 4, 6 (every layout kind: several hosts, interleaved, one host, one rank per host, a power of two and not);
     * n = 5, 7, 8, 9 in the long tier, below.
     */
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {2, 3, 4, 6})
    void allReduceGivesTheDocumentedBytesOnEveryLayout(int n) {
        allReduceOnEveryLayout(n);
    }

    /** The rest of the sweep up to 9 (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {5, 7, 8, 9})
    void allReduceGivesTheDocumentedBytesOnEveryLayoutRestOfTheSweep(int n) {
        allReduceGivesTheDocumentedBytesOnEveryLayout(n);
    }

    /** The same sweep for n = 10..16: the same code paths at larger n, 35 s of simulation, so in the long tier. */
    @LongTest
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {10, 11, 12, 13, 14, 15, 16})
    void allReduceGivesTheDocumentedBytesOnEveryLayoutUpTo16(int n) {
        allReduceOnEveryLayout(n);
    }

    private static void allReduceOnEveryLayout(int n) {
        List<String> bad = new ArrayList<>();
        Random rnd = new Random(n);
        for (Map.Entry<String, HostLayout> layout : layouts(n).entrySet()) {
            HostLayout h = layout.getValue();
            for (DType t : DType.values()) {
                for (long e : sizes(n, h)) {
                    MemorySegment[] inputs = MeshChecks.inputs(rnd, t, n, e);
                    for (ReduceOp op : ReduceOp.values()) {
                        MemorySegment want = MeshChecks.hierarchicalReference(op, t, inputs, e, h);
                        for (Algorithm a : ALGORITHMS) {
                            List<MeshSchedule> schedules = new ArrayList<>();
                            for (int r = 0; r < n; r++) schedules.add(MeshAlgorithms.allReduce(a, h, r, e, t.itemSize()));
                            MemorySegment[] work = MeshChecks.copies(inputs);
                            ScheduleSimulator.run(schedules, work, op, t);
                            for (int r = 0; r < n; r++) {
                                if (work[r].mismatch(want) != -1) {
                                    bad.add(a + " " + layout.getKey() + " " + op + " " + t + " E=" + e + " rank " + r);
                                }
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
    void sumScatterGivesEachRankItsChunkOnEveryLayout(int n) {
        List<String> bad = new ArrayList<>();
        Random rnd = new Random(200 + n);
        for (Map.Entry<String, HostLayout> layout : layouts(n).entrySet()) {
            HostLayout h = layout.getValue();
            for (DType t : DType.values()) {
                for (long c : new long[] {0, 1, 2, 3, 5, 17}) {
                    MemorySegment[] inputs = MeshChecks.inputs(rnd, t, n, c * n);
                    MemorySegment want = MeshChecks.hierarchicalScatterReference(t, inputs, c * n, h);
                    long chunk = c * t.itemSize();
                    for (Algorithm a : ALGORITHMS) {
                        List<MeshSchedule> schedules = new ArrayList<>();
                        for (int r = 0; r < n; r++) schedules.add(MeshAlgorithms.sumScatter(a, h, r, chunk));
                        MemorySegment[] work = MeshChecks.copies(inputs);
                        ScheduleSimulator.run(schedules, work, ReduceOp.SUM, t);
                        for (int r = 0; r < n; r++) {
                            if (work[r].asSlice(r * chunk, chunk).mismatch(want.asSlice(r * chunk, chunk)) != -1) {
                                bad.add(a + " " + layout.getKey() + " " + t + " C=" + c + " rank " + r);
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
    void allGatherDeliversEveryBlockOnEveryLayout(int n) {
        List<String> bad = new ArrayList<>();
        for (Map.Entry<String, HostLayout> layout : layouts(n).entrySet()) {
            HostLayout h = layout.getValue();
            for (long bytes : new long[] {0, 1, 3, 8, 13, 1000}) {
                MemorySegment want = Arena.ofAuto().allocate(Math.max(1, n * bytes)).asSlice(0, n * bytes);
                for (int q = 0; q < n; q++) {
                    for (long i = 0; i < bytes; i++) want.set(ValueLayout.JAVA_BYTE, q * bytes + i, (byte) (q * 31 + i * 7 + 1));
                }
                for (Algorithm a : ALGORITHMS) {
                    MemorySegment[] work = new MemorySegment[n];
                    List<MeshSchedule> schedules = new ArrayList<>();
                    for (int r = 0; r < n; r++) {
                        work[r] = Arena.ofAuto().allocate(Math.max(1, n * bytes)).asSlice(0, n * bytes);
                        work[r].fill((byte) 0xEE);
                        MemorySegment.copy(want, r * bytes, work[r], r * bytes, bytes);
                        schedules.add(MeshAlgorithms.allGather(a, h, r, bytes));
                    }
                    ScheduleSimulator.run(schedules, work, ReduceOp.SUM, DType.UINT8);
                    for (int r = 0; r < n; r++) {
                        if (work[r].mismatch(want) != -1) bad.add(a + " " + layout.getKey() + " bytes=" + bytes + " rank " + r);
                    }
                }
            }
        }
        assertThat(bad).isEmpty();
    }

    /** Element counts around the stripe boundaries of {@code h}, and past the inter-host crossover to halving and doubling. */
    private static long[] sizes(int n, HostLayout h) {
        java.util.TreeSet<Long> s = new java.util.TreeSet<>();
        for (long e : MeshChecks.sizes(n)) s.add(e);
        int stripes = h.minPerHost();
        s.addAll(List.of((long) stripes - 1, (long) stripes, (long) stripes + 1, 2L * stripes + 1));
        s.add(Hierarchical.INTER_HOST_RD_MAX_BYTES / 2 * stripes + 3);   // slices of 2-byte types just above the crossover
        s.removeIf(x -> x < 0);
        return s.stream().mapToLong(Long::longValue).toArray();
    }

    @Test
    void associationOrderIsHostsFirst() {
        // float32, where 1e8 + 1 = 1e8: ranks 0,1 on host A, ranks 2,3 on host B
        HostLayout h = HostLayout.ofHosts(0, 0, 1, 1);
        // host values (1e8 + 1) = 1e8 and (-1e8 + 1) = -1e8, then 1e8 + -1e8 = 0 (as flat rd: (x0+x1)+(x2+x3))
        assertThat(allSum(h, 1e8f, 1f, -1e8f, 1f)).containsOnly(0f);
        // interleaved, ranks 0,2 on host A and 1,3 on B: (x0 + x2) + (x1 + x3) = (1e8 - 1e8) + (1 + 1) = 2
        assertThat(allSum(HostLayout.ofHosts(0, 1, 0, 1), 1e8f, 1f, -1e8f, 1f)).containsOnly(2f);
        // three hosts of one rank each: §10.4's tree, the pair (0, 1) first: (x0 + x1) + x2
        assertThat(allSum(HostLayout.separate(3), 1e8f, -1e8f, 1f)).containsOnly(1f);
        // one host of three: left to right, ((x0 + x1) + x2)
        assertThat(allSum(HostLayout.ofHosts(0, 0, 0), 1f, 1e8f, -1e8f)).containsOnly(0f);
    }

    private static List<Float> allSum(HostLayout h, float... values) {
        int n = values.length;
        MemorySegment[] work = new MemorySegment[n];
        List<MeshSchedule> schedules = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            work[r] = Array.of(values[r]).segment();
            schedules.add(MeshAlgorithms.allReduce(Algorithm.HIER, h, r, 1, 4));
        }
        ScheduleSimulator.run(schedules, work, ReduceOp.SUM, DType.FLOAT32);
        List<Float> out = new ArrayList<>();
        for (MemorySegment w : work) out.add(w.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
        return out;
    }

    @Test
    void onlyTheStripeOwnersTalkBetweenHostsAndEachByteCrossesOncePerHost() {
        // 2 hosts of 4 ranks in blocks, 1000 float32: 4 stripes of 250 elements (1000 bytes)
        HostLayout h = HostLayout.ofHosts(0, 0, 0, 0, 1, 1, 1, 1);
        long interHost = 0;
        for (int r = 0; r < 8; r++) {
            MeshSchedule s = MeshAlgorithms.allReduce(Algorithm.HIER, h, r, 1000, 4);
            for (MeshSchedule.Step st : s.steps()) {
                for (MeshSchedule.Message m : st.messages()) {
                    if (!h.sameHost(r, m.peer())) {
                        assertThat(h.localOf(m.peer())).isEqualTo(h.localOf(r));   // the same stripe's owner
                        if (m.send()) interHost += m.length();
                    }
                }
            }
            assertThat(s.steps()).hasSize(3);   // inside, between (one round of recursive doubling), inside
        }
        // every host sends its 4000 bytes once (the 2-host all-reduce of a slice is one exchange)
        assertThat(interHost).isEqualTo(2 * 4000);
        // the leader variant: one member per host talks to the other host
        for (int r = 0; r < 8; r++) {
            for (MeshSchedule.Step st : MeshAlgorithms.allReduce(Algorithm.HIER_LEADER, h, r, 1000, 4).steps()) {
                for (MeshSchedule.Message m : st.messages()) if (!h.sameHost(r, m.peer())) assertThat(h.localOf(r)).isZero();
            }
        }
    }

    @Test
    void layoutNumbersHostsByTheirLowestRank() {
        HostLayout h = HostLayout.of(new long[] {77, 5, 77, 9, 5});
        assertThat(h.hosts()).isEqualTo(3);
        assertThat(new int[] {h.hostOf(0), h.hostOf(1), h.hostOf(2), h.hostOf(3), h.hostOf(4)}).containsExactly(0, 1, 0, 2, 1);
        assertThat(new int[] {h.localOf(0), h.localOf(1), h.localOf(2), h.localOf(3), h.localOf(4)}).containsExactly(0, 0, 1, 0, 1);
        assertThat(h.minPerHost()).isEqualTo(1);
        assertThat(h.members(1)).containsExactly(1, 4);
        assertThat(h.sharesHosts()).isTrue();
        assertThat(HostLayout.separate(4).sharesHosts()).isFalse();
        // stripe 1 of host 0's data (ranks 0 and 2, 8 bytes each, 2 stripes): rank 2's block
        assertThat(Hierarchical.stripeRuns(h, 0, 1, 2, 8)).singleElement().satisfies(run -> assertThat(run).containsExactly(16, 8));
        // stripe 0 of 3 over ranks 1 and 4's 8-byte blocks: 6 bytes of rank 1's block
        assertThat(Hierarchical.stripeRuns(h, 1, 0, 3, 8)).singleElement().satisfies(run -> assertThat(run).containsExactly(8, 6));
    }
}
