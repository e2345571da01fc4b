package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.ring.RingGroup;
import dev.jdist.ring.RingTestSupport;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mesh algorithms over real sockets (spec collectives.md §10): rings of n ranks in one JVM (a thread per rank) over
 * loopback, told that every member is jdist, run every op with each algorithm forced and with the default choice; every
 * rank checks its result against §10.4's value byte for byte, so every rank has the same bytes.
 */
@Timeout(300)
class MeshInProcessTest {

    @TempDir
    Path dir;

    /** Runs {@code body} on every rank of an in-process n-rank ring whose members are declared jdist with {@code env}. */
    private List<String> onJdistRing(int n, Map<String, String> env, java.util.function.Function<RingGroup, String> body)
            throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        return RingTestSupport.onEveryRank(hf, n, Map.of(), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, env);
            return body.apply(rg);
        });
    }

    @ParameterizedTest(name = "{0} ranks, JDIST_ALGO={1}")
    @CsvSource({"2,rd", "3,rd", "3,rhd", "4,rhd", "5,rd", "5,rhd", "6,bruck", "7,rh", "8,rd", "8,rhd", "3,auto", "5,auto",
            "8,auto", "16,rd", "13,rhd"})
    void everyOpEveryDtypeGivesTheDocumentedBytesOnEveryRank(int n, String algo) throws Exception {
        long seed = 7L * n + algo.hashCode();
        List<String> failures = onJdistRing(n, Map.of("JDIST_ALGO", algo), g -> checkAll(g, seed, n <= 8));
        assertThat(String.join("", failures)).isEmpty();
    }

    /** Every op and dtype at sizes 0, 1, odd and around the segment counts; returns what was wrong ("" when right). */
    static String checkAll(GroupImpl g, long seed, boolean allDtypes) {
        int n = g.size();
        int r = g.rank();
        StringBuilder bad = new StringBuilder();
        Random rnd = new Random(seed);   // the same on every rank: each rank makes every rank's inputs
        DType[] types = allDtypes ? DType.values() : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.INT8, DType.COMPLEX64};
        for (DType t : types) {
            int s = t.itemSize();
            for (long e : MeshAlgorithmsTest.sizes(n)) {
                MemorySegment[] inputs = MeshAlgorithmsTest.inputs(rnd, t, n, e);
                for (ReduceOp op : ReduceOp.values()) {
                    Array out = Array.zeros(t, Math.toIntExact(e));
                    g.allReduce(Array.wrap(inputs[r], t, Math.toIntExact(e)), out, op);
                    MemorySegment want = expected(g, CollectiveKind.ALL_REDUCE, e * s, () -> MeshAlgorithmsTest.reference(op, t, inputs, e));
                    if (want != null && out.segment().mismatch(want) != -1) {
                        bad.append("rank ").append(r).append(' ').append(op).append(' ').append(t).append(" E=").append(e).append('\n');
                    }
                }
                Array gathered = Array.zeros(t, Math.toIntExact(e * n));
                g.allGather(Array.wrap(inputs[r], t, Math.toIntExact(e)), gathered);
                for (int q = 0; q < n; q++) {
                    if (gathered.segment().asSlice(q * e * s, e * s).mismatch(inputs[q]) != -1) {
                        bad.append("rank ").append(r).append(" all_gather ").append(t).append(" E=").append(e).append(" block ").append(q).append('\n');
                        break;
                    }
                }
            }
            for (long c : new long[] {0, 1, 3, 17}) {
                MemorySegment[] inputs = MeshAlgorithmsTest.inputs(rnd, t, n, c * n);
                Array out = Array.zeros(t, Math.toIntExact(c));
                Array in = Array.wrap(inputs[r], t, Math.toIntExact(c * n));
                byte[] before = in.toBytes();
                g.sumScatter(in, out);
                MemorySegment want = expected(g, CollectiveKind.SUM_SCATTER, c * n * s,
                        () -> MeshAlgorithmsTest.reference(ReduceOp.SUM, t, inputs, c * n));
                if (want != null && out.segment().mismatch(want.asSlice(r * c * s, c * s)) != -1) {
                    bad.append("rank ").append(r).append(" sum_scatter ").append(t).append(" C=").append(c).append('\n');
                }
                if (!java.util.Arrays.equals(before, in.toBytes())) bad.append("rank ").append(r).append(" sum_scatter changed its input\n");
            }
        }
        return bad.toString();
    }

    /** §10.4's value when the op ran a mesh algorithm; null (values checked by the ring's own tests) when it ran the ring. */
    private static MemorySegment expected(GroupImpl g, CollectiveKind kind, long bytes, java.util.function.Supplier<MemorySegment> ref) {
        return ((RingGroup) g).algorithmFor(kind, bytes) == Algorithm.RING ? null : ref.get();
    }

    @Test
    void aGroupWithoutTheJdistGuaranteeOpensNoMeshAndRunsTheRing() throws Exception {
        // no membersAreJdist: MLX peers may be present, so whatever JDIST_ALGO says, nothing but the ring
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 4, Map.of("JDIST_ALGO", "rd"), g -> {
            RingGroup rg = (RingGroup) g;
            Array x = Array.of(1f, 2f, 3f);
            Array sum = Array.zeros(DType.FLOAT32, 3);
            rg.allReduce(x, sum, ReduceOp.SUM);
            return rg.peerMesh().isPresent() + " " + rg.algorithmFor(CollectiveKind.ALL_REDUCE, 4) + " " + sum.getDouble(2);
        });
        assertThat(out).containsOnly("false ring 12.0");
    }

    @Test
    void meshConnectionsAreMadeOnDemandForThePeersAnAlgorithmNeeds() throws Exception {
        Map<String, String> env = new HashMap<>(Map.of("JDIST_ALGO", "rd", "JDIST_JOB_TOKEN", "s3cret"));
        List<String> out = onJdistRing(8, env, g -> {
            int before = g.peerMesh().orElseThrow().openConnections();
            Array x = Array.of((float) g.rank());
            Array y = Array.zeros(DType.FLOAT32, 1);
            g.allReduce(x, y, ReduceOp.SUM);            // recursive doubling over 8: partners r^1, r^2, r^4
            int afterRd = g.peerMesh().orElseThrow().openConnections();
            g.useAlgorithmPolicy(AlgorithmPolicy.defaults().forcing(CollectiveKind.ALL_GATHER, Algorithm.BRUCK));
            Array all = Array.zeros(DType.FLOAT32, 8);
            g.allGather(x, all);                        // Bruck adds r-1, r+2 or r-2 (r±4 is r^4): 5 in all
            int afterBruck = g.peerMesh().orElseThrow().openConnections();
            return before + " " + afterRd + " " + afterBruck + " " + y.getDouble(0) + " " + all.getDouble(7);
        });
        assertThat(out).containsOnly("0 3 5 28.0 7.0");
    }

    @Test
    void differentAlgorithmSettingsFailEveryRankNamingThem() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 3, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 3, Map.of(), g -> {
            try {
                ((RingGroup) g).membersAreJdist(null, g.rank() == 2 ? Map.of("JDIST_ALGO", "rd") : Map.of());
                return "formed";
            } catch (RuntimeException e) {
                return e.getClass().getSimpleName() + ": " + e.getMessage();
            }
        });
        assertThat(out).allSatisfy(m -> assertThat(m).startsWith("ConfigException")
                .contains("JDIST_ALGO and JDIST_ALGO_RULES").contains("ranks [0, 1]").contains("ranks [2]"));
    }

    @Test
    void aSplitOfAJdistGroupHasItsOwnMesh() throws Exception {
        List<String> out = onJdistRing(6, Map.of("JDIST_ALGO", "rd"), g -> {
            GroupImpl sub = g.split(g.rank() % 2, g.rank());
            try {
                Array y = Array.zeros(DType.FLOAT32, 1);
                sub.allReduce(Array.of((float) g.rank()), y, ReduceOp.SUM);
                return ((RingGroup) sub).peerMesh().isPresent() + " " + y.getDouble(0);
            } finally {
                sub.close();
            }
        });
        assertThat(out).containsExactly("true 6.0", "true 9.0", "true 6.0", "true 9.0", "true 6.0", "true 9.0");
    }

}
