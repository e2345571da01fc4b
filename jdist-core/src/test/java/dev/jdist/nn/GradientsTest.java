package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.ThreadGroups;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

@Timeout(60)
class GradientsTest {

    @AfterEach
    void reset() { Distributed.reset(); }

    /** Ten float32 leaves of 10 elements; rank r's leaf i holds values derived from (seed, r, i). */
    private static List<Array> tenLeaves(int rank) {
        Random rng = new Random(1000L * rank + 7);
        List<Array> leaves = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            float[] v = new float[10];
            for (int j = 0; j < 10; j++) v[j] = rng.nextFloat() * 4 - 2;
            leaves.add(Array.fromFloats(v, 2, 5));
        }
        return leaves;
    }

    /** The average as the collective computes it: sum in rank order in float32, then / n. */
    private static float[] expectedAverage(List<List<Array>> perRank, int leaf) {
        int n = perRank.size();
        float[] acc = perRank.get(0).get(leaf).toFloatArray();
        for (int r = 1; r < n; r++) {
            float[] v = perRank.get(r).get(leaf).toFloatArray();
            for (int j = 0; j < acc.length; j++) acc[j] += v[j];
        }
        for (int j = 0; j < acc.length; j++) acc[j] /= n;
        return acc;
    }

    @ParameterizedTest(name = "{0} ranks, threshold {1} bytes -> {2} collectives")
    @CsvSource({
            "2, 33554432, 1", "2, 200, 2", "2, 0, 10", "2, -1, 10",
            "4, 33554432, 1", "4, 200, 2", "4, 0, 10", "4, 40, 10", "4, 80, 5", "4, 400, 1"})
    void specExamplesPackSmallLeavesIntoFewCollectivesAndGiveTheAverages(int n, long threshold, int expectedCollectives) {
        ThreadGroups world = ThreadGroups.of(n);
        List<List<Array>> inputs = new ArrayList<>();
        for (int r = 0; r < n; r++) inputs.add(tenLeaves(r));
        List<List<Array>> results = world.onEveryRank(g -> Gradients.average(inputs.get(g.rank()), g, threshold));
        for (int r = 0; r < n; r++) {
            assertThat(world.collectives(r)).as("collectives issued by rank %d", r).isEqualTo(expectedCollectives);
            assertThat(world.bytes(r)).as("bytes sent by rank %d", r).isEqualTo(10 * 40);
            List<Array> out = results.get(r);
            assertThat(out).hasSize(10);
            for (int i = 0; i < 10; i++) {
                assertThat(out.get(i).dtype()).isEqualTo(DType.FLOAT32);
                assertThat(out.get(i).shape()).containsExactly(2, 5);
                assertThat(out.get(i).toFloatArray()).as("leaf %d on rank %d", i, r).containsExactly(expectedAverage(inputs, i));
            }
        }
    }

    @Test
    void defaultThresholdIs32MiBAndSendsTenSmallLeavesAsOneMessage() {
        assertThat(Gradients.DEFAULT_ALL_REDUCE_SIZE).isEqualTo(32L * 1024 * 1024);
        ThreadGroups world = ThreadGroups.of(3);
        world.onEveryRank(g -> Gradients.average(tenLeaves(g.rank()), g));
        assertThat(world.collectives(0)).isEqualTo(1);
    }

    @Test
    void theLeafThatReachesTheThresholdClosesItsGroup() {
        List<Array> leaves = List.of(Array.zeros(DType.FLOAT32, 30), Array.zeros(DType.FLOAT32, 30),
                Array.zeros(DType.FLOAT32, 100), Array.zeros(DType.FLOAT32, 5));
        // bytes 120, 120, 400, 20 with threshold 200: [0,2) closes at 240, [2,3) at 400, [3,4) is the rest
        assertThat(Gradients.plan(leaves, 200, null)).containsExactly(new int[] {0, 2}, new int[] {2, 3}, new int[] {3, 4});
        // with a 2-byte communication dtype the counts halve: 60, 120 (close), 200 (close), 10
        assertThat(Gradients.plan(leaves, 200, DType.FLOAT16)).containsExactly(new int[] {0, 3}, new int[] {3, 4});
        assertThat(Gradients.plan(List.of(), 200, null)).isEmpty();
    }

    @Test
    void integerGradientsAverageToFloat32AsMlxPromotes() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> out = world.onEveryRank(g -> Gradients.average(
                List.of(Array.fromInts(new int[] {1 + g.rank(), 4, 7 * g.rank()}, 3), Array.fromInts(new int[] {10}, 1)), g));
        for (List<Array> o : out) {
            assertThat(o.get(0).dtype()).isEqualTo(DType.FLOAT32);
            assertThat(o.get(0).toFloatArray()).containsExactly(1.5f, 4f, 3.5f);
            assertThat(o.get(1).toFloatArray()).containsExactly(10f);
        }
        assertThat(world.collectives(0)).isEqualTo(1);
    }

    @Test
    void mixedDtypesFallBackToOneCollectivePerLeafAndKeepFloatDtypes() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> out = world.onEveryRank(g -> Gradients.average(List.of(
                Array.fromFloats(new float[] {2f * g.rank(), 1f}, 2),
                Array.fromDoubles(new double[] {1.0 + g.rank()}, 1),
                Array.fromFloats(new float[] {4f}, 1)), g));
        assertThat(world.collectives(0)).isEqualTo(3);
        for (List<Array> o : out) {
            assertThat(o.get(0).toFloatArray()).containsExactly(1f, 1f);
            assertThat(o.get(1).dtype()).isEqualTo(DType.FLOAT64);
            assertThat(o.get(1).toDoubleArray()).containsExactly(1.5);
            assertThat(o.get(2).toFloatArray()).containsExactly(4f);
        }
    }

    @Test
    void communicationDtypeCastsBeforeTheSumAndBackAfterwardsHalvingTheBytes() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> out = world.onEveryRank(g -> Gradients.average(
                List.of(Array.fromFloats(new float[] {0.5f + g.rank(), -3f, 1024f}, 3), Array.fromFloats(new float[] {g.rank()}, 1)),
                g, Gradients.DEFAULT_ALL_REDUCE_SIZE, DType.FLOAT16));
        assertThat(world.collectives(0)).isEqualTo(1);
        assertThat(world.bytes(0)).isEqualTo(4 * 2);
        for (List<Array> o : out) {
            assertThat(o.get(0).dtype()).isEqualTo(DType.FLOAT32);
            assertThat(o.get(0).toFloatArray()).containsExactly(1f, -3f, 1024f);
            assertThat(o.get(1).toFloatArray()).containsExactly(0.5f);
        }
    }

    @Test
    void halfPrecisionAndComplexGradientsKeepTheirDtype() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> out = world.onEveryRank(g -> {
            Array c = Array.zeros(DType.COMPLEX64, 1);
            c.setComplex(0, 1f + g.rank(), -2f);
            return Gradients.average(List.of(Array.fromDoubles(DType.BFLOAT16, new double[] {3 * g.rank()}, 1), c), g);
        });
        assertThat(world.collectives(0)).isEqualTo(2);   // two dtypes: one collective per leaf
        for (List<Array> o : out) {
            assertThat(o.get(0).dtype()).isEqualTo(DType.BFLOAT16);
            assertThat(o.get(0).toFloatArray()).containsExactly(1.5f);
            assertThat(o.get(1).dtype()).isEqualTo(DType.COMPLEX64);
            assertThat(o.get(1).getDouble(0)).isEqualTo(1.5);
            assertThat(o.get(1).getImag(0)).isEqualTo(-2f);
        }
    }

    @Test
    void namedGradientsKeepTheirKeysAndOrder() {
        ThreadGroups world = ThreadGroups.of(2);
        List<Map<String, Array>> out = world.onEveryRank(g -> {
            Map<String, Array> grads = new LinkedHashMap<>();
            grads.put("layers.1.weight", Array.fromFloats(new float[] {g.rank(), 2}, 2));
            grads.put("layers.0.bias", Array.fromFloats(new float[] {4 * g.rank()}, 1));
            grads.put("layers.0.weight", Array.fromFloats(new float[] {1, 1, 1, 3 + g.rank()}, 2, 2));
            return Gradients.average(grads, g, 8);
        });
        assertThat(world.collectives(0)).isEqualTo(2);   // 8 bytes close [weight1], then bias+weight0
        for (Map<String, Array> o : out) {
            assertThat(o.keySet()).containsExactly("layers.1.weight", "layers.0.bias", "layers.0.weight");
            assertThat(o.get("layers.1.weight").toFloatArray()).containsExactly(0.5f, 2f);
            assertThat(o.get("layers.0.bias").toFloatArray()).containsExactly(2f);
            assertThat(o.get("layers.0.weight").shape()).containsExactly(2, 2);
            assertThat(o.get("layers.0.weight").toFloatArray()).containsExactly(1f, 1f, 1f, 3.5f);
        }
    }

    @Test
    void oneRankReturnsTheInputItselfWithoutCommunication() {
        Group single = Distributed.init(false, "any", Map.of());
        assertThat(single.size()).isEqualTo(1);
        List<Array> grads = tenLeaves(0);
        assertThat(Gradients.average(grads, single)).isSameAs(grads);
        Map<String, Array> named = Map.of("w", Array.of(1f));
        assertThat(Gradients.average(named, single)).isSameAs(named);
        assertThat(Gradients.averageAsync(grads, single, 0, null).join()).isSameAs(grads);
    }

    @Test
    void emptyGradientListIsReturnedAsIs() {
        ThreadGroups world = ThreadGroups.of(2);
        List<Array> empty = List.of();
        assertThat(world.onEveryRank(g -> Gradients.average(empty, g))).allSatisfy(o -> assertThat(o).isSameAs(empty));
        assertThat(world.collectives(0)).isZero();
    }

    @Test
    void resultsAreFreshMemoryNotTheCallersArrays() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> in = List.of(tenLeaves(0), tenLeaves(1));
        List<float[]> before = in.get(0).stream().map(Array::toFloatArray).toList();
        world.onEveryRank(g -> Gradients.average(in.get(g.rank()), g, 0));
        for (int i = 0; i < 10; i++) assertThat(in.get(0).get(i).toFloatArray()).containsExactly(before.get(i));
    }

    @Test
    void asyncAverageGivesTheSameResultsAndCollectives() {
        ThreadGroups world = ThreadGroups.of(4);
        List<List<Array>> in = new ArrayList<>();
        for (int r = 0; r < 4; r++) in.add(tenLeaves(r));
        List<List<Array>> out = world.onEveryRank(g -> Gradients.averageAsync(in.get(g.rank()), g, 200, null).join());
        assertThat(world.collectives(0)).isEqualTo(2);
        for (List<Array> o : out) {
            for (int i = 0; i < 10; i++) assertThat(o.get(i).toFloatArray()).containsExactly(expectedAverage(in, i));
        }
    }

    @Test
    void overlappedBucketsSendFullBucketsEarlyAndMatchTheBatchedCollectives() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> in = List.of(tenLeaves(0), tenLeaves(1));
        List<List<Array>> out = world.onEveryRank(g -> {
            GradientBuckets buckets = Gradients.overlapped(g, 200, null);
            for (int i = 0; i < 5; i++) assertThat(buckets.add(in.get(g.rank()).get(i))).isEqualTo(i);
            // the first bucket (5 x 40 bytes) is full: its all_sum runs without waiting for finish()
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (world.collectives(g.rank()) < 1 && System.nanoTime() < deadline) Thread.onSpinWait();
            assertThat(world.collectives(g.rank())).as("collectives before finish()").isEqualTo(1);
            for (int i = 5; i < 10; i++) assertThat(buckets.add(in.get(g.rank()).get(i))).isEqualTo(i);
            return buckets.finish().join();
        });
        assertThat(world.collectives(0)).isEqualTo(2);
        for (List<Array> o : out) {
            for (int i = 0; i < 10; i++) assertThat(o.get(i).toFloatArray()).containsExactly(expectedAverage(in, i));
        }
    }

    @Test
    void overlappedBucketsCloseOnADtypeChange() {
        ThreadGroups world = ThreadGroups.of(2);
        List<List<Array>> out = world.onEveryRank(g -> {
            GradientBuckets b = Gradients.overlapped(g, Gradients.DEFAULT_ALL_REDUCE_SIZE, null);
            b.add(Array.of(1f, 2f));
            b.add(Array.of(3f + g.rank()));
            b.add(Array.of(5 + g.rank()));
            b.add(Array.of(1f));
            List<Array> r = b.finish().join();
            assertThatThrownBy(() -> b.add(Array.of(1f))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("overlapped");
            return r;
        });
        assertThat(world.collectives(0)).isEqualTo(3);
        for (List<Array> o : out) {
            assertThat(o.get(1).toFloatArray()).containsExactly(3.5f);
            assertThat(o.get(2).dtype()).isEqualTo(DType.FLOAT32);
            assertThat(o.get(2).toFloatArray()).containsExactly(5.5f);
        }
    }

    @Test
    void clipNormShardedUsesTheGlobalNorm() {
        ThreadGroups world = ThreadGroups.of(2);
        // rank 0 holds (3), rank 1 holds (4): global norm 5
        List<Gradients.Clipped> out = world.onEveryRank(g -> Gradients.clipNormSharded(
                List.of(Array.of(g.rank() == 0 ? 3f : 4f)), 1.0, g));
        assertThat(out.get(0).norm()).isCloseTo(5.0, within(1e-6));
        assertThat(out.get(0).gradients().get(0).toFloatArray()[0]).isCloseTo(0.6f, within(1e-5f));
        assertThat(out.get(1).gradients().get(0).toFloatArray()[0]).isCloseTo(0.8f, within(1e-5f));
        assertThat(world.collectives(0)).isEqualTo(1);
    }

    @Test
    void nullLeafIsAnArgumentErrorNamingItsIndex() {
        ThreadGroups world = ThreadGroups.of(2);
        List<Array> withNull = new ArrayList<>();
        withNull.add(Array.of(1f));
        withNull.add(null);
        assertThatThrownBy(() -> Gradients.average(withNull, world.group(0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("gradient 1");
    }
}
