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
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(60)
class ShardedLinearTest {

    @AfterEach
    void reset() { Distributed.reset(); }

    private static Array gaussian(Random rng, int... shape) {
        int n = Arrays.stream(shape).reduce(1, (a, b) -> a * b);
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) rng.nextGaussian();
        return Array.fromFloats(v, shape);
    }

    private static float maxAbsDiff(float[] a, float[] b) {
        assertThat(a).hasSameSizeAs(b);
        float m = 0;
        for (int i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
        return m;
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void allToShardedGivesEachRankItsSliceOfTheFullOutputWithoutCommunication(int n) {
        Random rng = new Random(3);
        Linear full = Linear.random(12, 8, true, rng);
        Array x = gaussian(rng, 5, 12);
        float[] expected = full.forward(x).toFloatArray();
        ThreadGroups world = ThreadGroups.of(n);
        List<Array> ys = world.onEveryRank(g -> AllToShardedLinear.fromLinear(full, g).forward(x));
        int slice = 8 / n;
        for (int r = 0; r < n; r++) {
            assertThat(ys.get(r).shape()).containsExactly(5, slice);
            float[] y = ys.get(r).toFloatArray();
            for (int i = 0; i < 5; i++) {
                for (int j = 0; j < slice; j++) {
                    // the same dot products as the full layer: bitwise equal
                    assertThat(y[i * slice + j]).isEqualTo(expected[i * 8 + r * slice + j]);
                }
            }
            assertThat(world.collectives(r)).isZero();
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void shardedToAllGivesEveryRankTheFullOutputWithOneAllSum(int n) {
        Random rng = new Random(4);
        Linear full = Linear.random(16, 6, true, rng);
        Array x = gaussian(rng, 3, 16);
        float[] expected = full.forward(x).toFloatArray();
        ThreadGroups world = ThreadGroups.of(n);
        List<Array> ys = world.onEveryRank(g -> {
            ShardedToAllLinear layer = ShardedToAllLinear.fromLinear(full, g);
            assertThat(layer.shard().weight().shape()).containsExactly(6, 16 / n);
            Array xr = Sharding.shard(x, 1, new int[] {0, 16}, n, g.rank(), "x");
            return layer.forward(xr);
        });
        for (int r = 0; r < n; r++) {
            assertThat(ys.get(r).shape()).containsExactly(3, 6);
            assertThat(maxAbsDiff(ys.get(r).toFloatArray(), expected)).isLessThan(1e-5f);
            assertThat(ys.get(r).toFloatArray()).containsExactly(ys.get(0).toFloatArray());
            assertThat(world.collectives(r)).isEqualTo(1);
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void shardedMlpEqualsTheUnshardedMlpWithOneAllSumPerBlock(int n) {
        Random rng = new Random(0);
        Linear up = Linear.random(32, 64, true, rng);
        Linear down = Linear.random(64, 32, true, rng);
        Array x = gaussian(new Random(1), 8, 32);
        float[] expected = down.forward(Activations.silu(up.forward(x))).toFloatArray();
        ThreadGroups world = ThreadGroups.of(n);
        List<Array> ys = world.onEveryRank(g -> {
            AllToShardedLinear a = AllToShardedLinear.fromLinear(up, g);
            ShardedToAllLinear b = ShardedToAllLinear.fromLinear(down, g);
            return b.forward(Activations.silu(a.forward(x)));
        });
        for (Array y : ys) assertThat(maxAbsDiff(y.toFloatArray(), expected)).isLessThan(1e-5f);
        assertThat(world.collectives(0)).isEqualTo(1);
    }

    @Test
    void segmentsKeepPartROfEverySegment() {
        // a fused projection of 3 segments of 4 output rows each; weight row i holds the value i
        float[] w = new float[12 * 2];
        for (int i = 0; i < 12; i++) { w[2 * i] = i; w[2 * i + 1] = i; }
        float[] b = new float[12];
        for (int i = 0; i < 12; i++) b[i] = 100 + i;
        Linear full = new Linear(Array.fromFloats(w, 12, 2), Array.fromFloats(b, 12));
        ThreadGroups world = ThreadGroups.of(2);
        List<AllToShardedLinear> layers = world.onEveryRank(g -> AllToShardedLinear.fromLinear(full, 3, g));
        assertThat(rowIds(layers.get(0).shard().weight())).containsExactly(0, 1, 4, 5, 8, 9);
        assertThat(rowIds(layers.get(1).shard().weight())).containsExactly(2, 3, 6, 7, 10, 11);
        assertThat(layers.get(1).shard().bias().toFloatArray()).containsExactly(102, 103, 106, 107, 110, 111);
        // explicit split points and fractions give the same cut here
        List<AllToShardedLinear> byIndex = world.onEveryRank(g -> AllToShardedLinear.fromLinear(full, new int[] {4, 8}, g));
        assertThat(rowIds(byIndex.get(1).shard().weight())).containsExactly(2, 3, 6, 7, 10, 11);
        List<AllToShardedLinear> byFraction = world.onEveryRank(g -> AllToShardedLinear.fromLinear(full, new double[] {1 / 3.0, 2 / 3.0}, g));
        assertThat(rowIds(byFraction.get(0).shard().weight())).containsExactly(0, 1, 4, 5, 8, 9);
        // unequal segments: [0,2) [2,12) -> rank 1 keeps row 1 and rows 7..11
        List<AllToShardedLinear> uneven = world.onEveryRank(g -> AllToShardedLinear.fromLinear(full, new int[] {2}, g));
        assertThat(rowIds(uneven.get(1).shard().weight())).containsExactly(1, 7, 8, 9, 10, 11);
    }

    @Test
    void shardedToAllCutsColumnsPerSegmentAndKeepsTheWholeBias() {
        float[] w = new float[2 * 8];
        for (int o = 0; o < 2; o++) for (int c = 0; c < 8; c++) w[o * 8 + c] = 10 * o + c;
        Linear full = new Linear(Array.fromFloats(w, 2, 8), Array.of(1f, 2f));
        ThreadGroups world = ThreadGroups.of(2);
        List<ShardedToAllLinear> layers = world.onEveryRank(g -> ShardedToAllLinear.fromLinear(full, 2, g));
        assertThat(layers.get(1).shard().weight().toFloatArray()).containsExactly(2, 3, 6, 7, 12, 13, 16, 17);
        assertThat(layers.get(1).shard().bias().toFloatArray()).containsExactly(1f, 2f);
        assertThat(layers.get(1).inputDims()).isEqualTo(8);
    }

    private static int[] rowIds(Array weight) {
        int rows = weight.shape(0);
        int[] ids = new int[rows];
        for (int i = 0; i < rows; i++) ids[i] = (int) weight.getDouble((long) i * weight.shape(1));
        return ids;
    }

    @Test
    void shardedBackwardGivesTheSlicesOfTheFullGradients() {
        Random rng = new Random(9);
        Linear up = Linear.random(6, 8, true, rng);
        Linear down = Linear.random(8, 4, true, rng);
        Array x = gaussian(rng, 3, 6);
        Array h = up.forward(x);
        Array y = down.forward(h);
        Linear.Grads gDown = down.backward(h, y);
        Linear.Grads gUp = up.backward(x, gDown.input());
        ThreadGroups world = ThreadGroups.of(2);
        List<Linear.Grads[]> grads = world.onEveryRank(g -> {
            AllToShardedLinear a = AllToShardedLinear.fromLinear(up, g);
            ShardedToAllLinear b = ShardedToAllLinear.fromLinear(down, g);
            Array hr = a.forward(x);
            Array yr = b.forward(hr);
            Linear.Grads gb = b.backward(hr, yr);
            Linear.Grads ga = a.backward(x, gb.input());
            return new Linear.Grads[] {ga, gb};
        });
        for (int r = 0; r < 2; r++) {
            Linear.Grads ga = grads.get(r)[0], gb = grads.get(r)[1];
            float[] wUp = Sharding.shard(gUp.weight(), 0, new int[] {0, 8}, 2, r, "w").toFloatArray();
            assertThat(maxAbsDiff(ga.weight().toFloatArray(), wUp)).isLessThan(1e-4f);
            assertThat(maxAbsDiff(ga.input().toFloatArray(), gUp.input().toFloatArray())).isLessThan(1e-4f);
            float[] wDown = Sharding.shard(gDown.weight(), 1, new int[] {0, 8}, 2, r, "w").toFloatArray();
            assertThat(maxAbsDiff(gb.weight().toFloatArray(), wDown)).isLessThan(1e-4f);
            assertThat(maxAbsDiff(gb.bias().toFloatArray(), gDown.bias().toFloatArray())).isLessThan(1e-4f);
        }
    }

    @Test
    void indivisibleSizesAreArgumentErrorsNamingSizesAndGroup() {
        Linear full = Linear.random(6, 6, true, new Random(0));
        ThreadGroups world = ThreadGroups.of(4);
        Group g0 = world.group(0);
        assertThatThrownBy(() -> AllToShardedLinear.fromLinear(full, g0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("6").hasMessageContaining("4 ranks");
        assertThatThrownBy(() -> ShardedToAllLinear.fromLinear(full, g0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4 ranks");
        assertThatThrownBy(() -> AllToShardedLinear.fromLinear(full, 4, g0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4 equal segments");
        assertThatThrownBy(() -> new AllToShardedLinear(6, 6, true, g0, new Random(0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("multiple of 4");
        assertThatThrownBy(() -> AllToShardedLinear.fromLinear(full, new int[] {4, 2}, g0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascending");
    }

    @Test
    void randomlyInitialisedShardsHaveTheShardShapes() {
        ThreadGroups world = ThreadGroups.of(2);
        List<int[][]> shapes = world.onEveryRank(g -> new int[][] {
                new AllToShardedLinear(6, 8, true, g, new Random(g.rank())).shard().weight().shape(),
                new ShardedToAllLinear(8, 6, true, g, new Random(g.rank())).shard().weight().shape()});
        assertThat(shapes.get(0)[0]).containsExactly(4, 6);
        assertThat(shapes.get(0)[1]).containsExactly(6, 4);
    }

    @Test
    void oneRankShardIsTheWholeLayer() {
        Group single = Distributed.init(false, "any", Map.of());
        Linear full = Linear.random(4, 4, true, new Random(0));
        AllToShardedLinear a = AllToShardedLinear.fromLinear(full, single);
        assertThat(a.shard().weight().toFloatArray()).containsExactly(full.weight().toFloatArray());
        Array x = Array.fromFloats(new float[] {1, 2, 3, 4}, 1, 4);
        assertThat(ShardedToAllLinear.fromLinear(full, single).forward(x).toFloatArray())
                .containsExactly(full.forward(x).toFloatArray());
        assertThat(a.shard().weight().dtype()).isEqualTo(DType.FLOAT32);
    }
}
