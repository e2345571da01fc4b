package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.Group;
import dev.jdist.TestGroups;
import dev.jdist.ring.RingTestSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The nn helpers over the real TCP ring (3 ranks as threads of this JVM, 127.0.0.1, free ports):
 * sync, async and overlapped averaging give the averages, bitwise identical on every rank, and the
 * sharded MLP equals the unsharded one.
 */
@Timeout(120)
class NnOverRingTest {
    @TempDir Path dir;

    private static List<Array> leaves(int rank) {
        Random rng = new Random(17L + rank);
        List<Array> out = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            float[] v = new float[10 + 7 * i];
            for (int j = 0; j < v.length; j++) v[j] = rng.nextFloat() * 2 - 1;
            out.add(Array.fromFloats(v, v.length));
        }
        return out;
    }

    @Test
    void averagingVariantsGiveTheSameBitsOnEveryRank() throws Exception {
        int n = 3;
        List<List<List<Array>>> results = RingTestSupport.onEveryRank(RingTestSupport.hostfile(dir, n, 1), n, Map.of(), impl -> {
            Group g = TestGroups.wrap(impl);
            List<Array> mine = leaves(g.rank());
            List<List<Array>> r = new ArrayList<>();
            r.add(Gradients.average(mine, g));
            r.add(Gradients.average(mine, g, 0));
            r.add(Gradients.averageAsync(mine, g, 300, null).join());
            GradientBuckets b = Gradients.overlapped(g, 300, null);
            for (Array a : mine) b.add(a);
            r.add(b.finish().join());
            return r;
        });
        List<List<Array>> inputs = List.of(leaves(0), leaves(1), leaves(2));
        for (int leaf = 0; leaf < 10; leaf++) {
            float[] expected = inputs.get(0).get(leaf).toFloatArray();
            for (int r = 1; r < n; r++) {
                float[] v = inputs.get(r).get(leaf).toFloatArray();
                for (int j = 0; j < expected.length; j++) expected[j] += v[j];
            }
            for (int j = 0; j < expected.length; j++) expected[j] /= n;
            for (int rank = 0; rank < n; rank++) {
                for (int variant = 0; variant < 4; variant++) {
                    Array got = results.get(rank).get(variant).get(leaf);
                    assertThat(got.toBytes()).as("rank %d variant %d leaf %d: same bits everywhere", rank, variant, leaf)
                            .isEqualTo(results.get(0).get(variant).get(leaf).toBytes());
                    float[] f = got.toFloatArray();
                    for (int j = 0; j < f.length; j++) assertThat(f[j]).isCloseTo(expected[j], within(1e-6f));
                }
            }
        }
    }

    @Test
    void shardedMlpOverTheRingEqualsTheUnshardedMlp() throws Exception {
        int n = 2;
        Random rng = new Random(0);
        Linear up = Linear.random(64, 128, true, rng);
        Linear down = Linear.random(128, 64, true, rng);
        float[] xv = new float[4 * 64];
        Random key = new Random(1);
        for (int i = 0; i < xv.length; i++) xv[i] = (float) key.nextGaussian();
        Array x = Array.fromFloats(xv, 4, 64);
        float[] expected = down.forward(Activations.silu(up.forward(x))).toFloatArray();
        List<float[]> ys = RingTestSupport.onEveryRank(RingTestSupport.hostfile(dir, n, 1), n, Map.of(), impl -> {
            Group g = TestGroups.wrap(impl);
            return ShardedToAllLinear.fromLinear(down, g)
                    .forward(Activations.silu(AllToShardedLinear.fromLinear(up, g).forward(x))).toFloatArray();
        });
        for (float[] y : ys) {
            assertThat(y).hasSameSizeAs(expected);
            for (int i = 0; i < y.length; i++) assertThat(y[i]).isCloseTo(expected[i], within(1e-5f));
        }
        assertThat(ys.get(1)).containsExactly(ys.get(0));
    }
}
