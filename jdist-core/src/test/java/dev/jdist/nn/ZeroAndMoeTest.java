package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.CollectiveChecks;
import dev.jdist.Group;
import dev.jdist.ThreadGroups;
import dev.jdist.ring.RingGroup;
import dev.jdist.ring.RingTestSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The data-parallel examples built on the operations MLX lacks, checked against a single process: initial weights
 * broadcast from rank 0, a ZeRO-1 sharded optimizer step (sum_scatter, shard update, all_gather) that trains a linear
 * regression exactly as one process with the whole batch does, and a mixture-of-experts layer whose tokens travel to
 * their expert's rank and back with all_to_all_v. Over the in-JVM thread groups and over a real jdist ring (peer mesh).
 */
@Timeout(180)
class ZeroAndMoeTest {
    private static final int IN = 6, OUT = 3, BATCH = 5, STEPS = 40;

    @TempDir Path dir;

    private <T> List<T> onThreads(int n, Function<Group, T> body) {
        return ThreadGroups.of(n).onEveryRank(body);
    }

    private <T> List<T> onJdistRing(int n, Function<Group, T> body) throws Exception {
        return RingTestSupport.onEveryRank(RingTestSupport.hostfile(dir, n, 1), n, Map.of(), impl -> {
            ((RingGroup) impl).membersAreJdist(null, Map.of());
            return body.apply(CollectiveChecks.jdistGroup(impl));
        });
    }

    // ------------------------------------------------------------------ ZeRO-1 with broadcast initial weights

    /** Rank r's batch: inputs and targets of a fixed linear map plus noise. */
    private static Array[] batch(int rank, int step) {
        Random rng = new Random(1000L * rank + step);
        float[] x = new float[BATCH * IN], t = new float[BATCH * OUT];
        for (int i = 0; i < x.length; i++) x[i] = (float) rng.nextGaussian();
        for (int b = 0; b < BATCH; b++) {
            for (int o = 0; o < OUT; o++) {
                float s = 0.5f * o;
                for (int i = 0; i < IN; i++) s += x[b * IN + i] * ((i + o) % 3 - 1);
                t[b * OUT + o] = s;
            }
        }
        return new Array[] {Array.fromFloats(x, BATCH, IN), Array.fromFloats(t, BATCH, OUT)};
    }

    /** Mean squared error gradient of the layer on a batch; returns the loss. */
    private static float lossAndGrads(Linear layer, Array[] xt, List<Array> grads) {
        float[] y = layer.forward(xt[0]).toFloatArray(), t = xt[1].toFloatArray();
        float[] dy = new float[y.length];
        float loss = 0;
        for (int i = 0; i < y.length; i++) {
            float d = y[i] - t[i];
            loss += d * d / y.length;
            dy[i] = 2 * d / y.length;
        }
        grads.clear();
        grads.addAll(layer.backward(xt[0], Array.fromFloats(dy, BATCH, OUT)).parameters());
        return loss;
    }

    /** Trains on every rank: each starts from its own random weights, takes rank 0's, runs ZeRO-1 steps. */
    private static float[][] trainSharded(Group g) {
        Linear layer = Linear.random(IN, OUT, true, new Random(77 + g.rank()));
        Parameters.broadcast(layer.parameters(), g, 0);
        float[] initial = layer.weight().toFloatArray();
        ShardedSgd opt = new ShardedSgd(g, 0.05f, 0.9f);
        List<Array> grads = new ArrayList<>();
        float first = 0, last = 0;
        for (int s = 0; s < STEPS; s++) {
            float loss = lossAndGrads(layer, batch(g.rank(), s), grads);
            if (s == 0) first = loss;
            last = loss;
            opt.step(layer.parameters(), grads);
        }
        float[] w = layer.weight().toFloatArray(), b = layer.bias().toFloatArray();
        return new float[][] {initial, w, b, {first, last, opt.stateElements()}};
    }

    /** The same training in one process: the average of every rank's gradients, full momentum state. */
    private static float[][] trainAlone(int n) {
        Linear layer = Linear.random(IN, OUT, true, new Random(77));
        float[] w = layer.weight().toFloatArray(), b = layer.bias().toFloatArray();
        float[] vw = new float[w.length], vb = new float[b.length];
        List<Array> grads = new ArrayList<>();
        for (int s = 0; s < STEPS; s++) {
            float[] gw = new float[w.length], gb = new float[b.length];
            for (int r = 0; r < n; r++) {
                lossAndGrads(layer, batch(r, s), grads);
                float[] a = grads.get(0).toFloatArray(), c = grads.get(1).toFloatArray();
                for (int i = 0; i < gw.length; i++) gw[i] += a[i];
                for (int i = 0; i < gb.length; i++) gb[i] += c[i];
            }
            for (int i = 0; i < w.length; i++) {
                vw[i] = 0.9f * vw[i] + gw[i] / n;
                w[i] -= 0.05f * vw[i];
            }
            for (int i = 0; i < b.length; i++) {
                vb[i] = 0.9f * vb[i] + gb[i] / n;
                b[i] -= 0.05f * vb[i];
            }
            layer = new Linear(Array.fromFloats(w.clone(), OUT, IN), Array.fromFloats(b.clone(), OUT));
        }
        return new float[][] {w, b};
    }

    private static void checkZero(List<float[][]> ranks, int n) {
        float[][] alone = trainAlone(n);
        float[] rank0Initial = Linear.random(IN, OUT, true, new Random(77)).weight().toFloatArray();
        int params = IN * OUT + OUT;
        for (int r = 0; r < n; r++) {
            float[][] got = ranks.get(r);
            assertThat(got[0]).as("rank %d starts from rank 0's weights", r).containsExactly(rank0Initial);
            assertThat(got[1]).as("rank %d: the same weights bit for bit", r).containsExactly(ranks.get(0)[1]);
            for (int i = 0; i < got[1].length; i++) assertThat(got[1][i]).isCloseTo(alone[0][i], within(1e-4f));
            for (int i = 0; i < got[2].length; i++) assertThat(got[2][i]).isCloseTo(alone[1][i], within(1e-4f));
            assertThat(got[3][1]).as("rank %d trains (loss %s → %s)", r, got[3][0], got[3][1]).isLessThan(got[3][0] / 10);
            assertThat((int) got[3][2]).as("rank %d holds 1/%d of the optimizer state", r, n).isEqualTo((params + n - 1) / n);
        }
    }

    @Test
    void zeroOneOnThreadGroupsTrainsAsOneProcessDoes() {
        for (int n : new int[] {2, 3, 4}) checkZero(onThreads(n, ZeroAndMoeTest::trainSharded), n);
    }

    @Test
    void zeroOneOverAJdistRingTrainsAsOneProcessDoes() throws Exception {
        checkZero(onJdistRing(3, ZeroAndMoeTest::trainSharded), 3);
    }

    // ------------------------------------------------------------------ mixture of experts with all_to_all_v

    private static final int D = 4, TOKENS = 7;

    /** Expert e (the same on every rank that builds it). */
    private static Linear expert(int e) { return Linear.random(D, D, true, new Random(500 + e)); }

    private static float[] tokens(int rank) {
        Random rng = new Random(900 + rank);
        float[] t = new float[TOKENS * D];
        for (int i = 0; i < t.length; i++) t[i] = (float) rng.nextGaussian();
        return t;
    }

    /** Top-1 routing by a fixed gate: the expert whose gate row has the largest dot product with the token. */
    private static int route(float[] t, int row, int experts) {
        int best = 0;
        float bestScore = Float.NEGATIVE_INFINITY;
        for (int e = 0; e < experts; e++) {
            float s = 0;
            for (int i = 0; i < D; i++) s += t[row * D + i] * (float) Math.sin(1 + e * D + i);
            if (s > bestScore) {
                bestScore = s;
                best = e;
            }
        }
        return best;
    }

    /**
     * One MoE layer with one expert per rank: tokens sorted by expert, sent to the expert's rank (all_to_all_v, the
     * receive sizes exchanged), transformed there, sent back with the sizes reversed, put back in token order.
     */
    private static float[] moeLayer(Group g) {
        int n = g.size();
        float[] t = tokens(g.rank());
        int[] expertOf = new int[TOKENS];
        int[] counts = new int[n];
        for (int k = 0; k < TOKENS; k++) counts[expertOf[k] = route(t, k, n)]++;
        Integer[] order = new Integer[TOKENS];
        for (int k = 0; k < TOKENS; k++) order[k] = k;
        Arrays.sort(order, (a, b) -> Integer.compare(expertOf[a], expertOf[b]));   // stable: token order within an expert
        float[] sorted = new float[TOKENS * D];
        for (int k = 0; k < TOKENS; k++) System.arraycopy(t, order[k] * D, sorted, k * D, D);

        Array arrived = g.allToAllV(Array.fromFloats(sorted, TOKENS, D), counts);
        int[] fromEach = g.allToAll(Array.fromInts(counts, n)).toIntArray();   // how many tokens each rank sent here
        Array done = arrived.shape(0) == 0 ? arrived : expert(g.rank()).forward(arrived);
        float[] back = g.allToAllV(done, fromEach, counts).toFloatArray();

        float[] out = new float[TOKENS * D];
        for (int k = 0; k < TOKENS; k++) System.arraycopy(back, k * D, out, order[k] * D, D);
        return out;
    }

    private static void checkMoe(List<float[]> got, int n) {
        for (int r = 0; r < n; r++) {
            float[] t = tokens(r);
            for (int k = 0; k < TOKENS; k++) {
                float[] want = expert(route(t, k, n)).forward(Array.fromFloats(Arrays.copyOfRange(t, k * D, k * D + D), 1, D)).toFloatArray();
                for (int i = 0; i < D; i++) {
                    assertThat(got.get(r)[k * D + i]).as("rank %d token %d", r, k).isCloseTo(want[i], within(1e-5f));
                }
            }
        }
    }

    @Test
    void mixtureOfExpertsOnThreadGroupsMatchesOneProcess() {
        for (int n : new int[] {2, 3, 5}) checkMoe(onThreads(n, ZeroAndMoeTest::moeLayer), n);
    }

    @Test
    void mixtureOfExpertsOverAJdistRingMatchesOneProcess() throws Exception {
        checkMoe(onJdistRing(4, ZeroAndMoeTest::moeLayer), 4);
    }
}
