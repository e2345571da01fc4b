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
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * The data-parallel examples built on the operations MLX lacks, checked against a single process: initial weights
 * broadcast from rank 0, a ZeRO-1 sharded optimizer step (sum_scatter, shard update, all_gather) that trains a linear
 * regression exactly as one process with the whole batch does, and a mixture-of-experts layer ({@link MixtureOfExperts})
 * whose tokens travel to their expert's rank and back with all_to_all_v. Over the in-JVM thread groups and over a real jdist ring (peer mesh).
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

    private static final int D = 4, EXPERTS = 4;

    /** The same layer on every rank. */
    private static MixtureOfExperts layer() { return MixtureOfExperts.random(D, 6, EXPERTS, new Random(500)); }

    /** Rank r's tokens: a different number on every rank, none on rank 1 (a rank that only serves its experts). */
    private static Array tokens(int rank) {
        int count = rank == 1 ? 0 : 3 + 4 * rank;
        Random rng = new Random(900 + rank);
        float[] t = new float[count * D];
        for (int i = 0; i < t.length; i++) t[i] = (float) rng.nextGaussian();
        return Array.fromFloats(t, count, D);
    }

    /** Expert-parallel output of rank r's tokens, and the single-process output of the same layer on them. */
    private static float[][] moeLayer(Group g) {
        MixtureOfExperts moe = layer();
        Array x = tokens(g.rank());
        return new float[][] {moe.forward(x, g).toFloatArray(), moe.forward(x).toFloatArray()};
    }

    private static void checkMoe(List<float[][]> got, int n) {
        int[] routed = new int[EXPERTS];
        for (int r = 0; r < n; r++) {
            assertThat(got.get(r)[0]).as("rank %d", r).hasSize(got.get(r)[1].length);
            for (int i = 0; i < got.get(r)[0].length; i++) {
                assertThat(got.get(r)[0][i]).as("rank %d element %d", r, i).isCloseTo(got.get(r)[1][i], within(1e-6f));
            }
            for (int e : layer().route(tokens(r)).expert()) routed[e]++;
        }
        long used = Arrays.stream(routed).filter(c -> c > 0).count();
        assertThat(used).as("tokens per expert %s: the check needs tokens to travel", Arrays.toString(routed)).isGreaterThan(1);
    }

    @Test
    void mixtureOfExpertsOnThreadGroupsMatchesOneProcess() {
        for (int n : new int[] {2, 4}) checkMoe(onThreads(n, ZeroAndMoeTest::moeLayer), n);
    }

    @Test
    void mixtureOfExpertsOverAJdistRingMatchesOneProcess() throws Exception {
        checkMoe(onJdistRing(4, ZeroAndMoeTest::moeLayer), 4);
    }

    @Test
    void mixtureOfExpertsSaysWhenTheExpertsDoNotDivideAmongTheRanks() {
        List<String> errors = onThreads(3, g -> {
            try {
                layer().forward(tokens(g.rank()), g);
                return "no error";
            } catch (IllegalArgumentException e) {
                return e.getMessage();
            }
        });
        assertThat(errors).allSatisfy(m -> assertThat(m).contains("4 experts do not divide among 3 ranks"));
    }

    @Test
    void mixtureOfExpertsRoutesEachTokenToItsHighestScoringExpertWithItsSoftmaxWeight() {
        Linear gate = new Linear(Array.fromFloats(new float[] {1, 0, 0, 1}, 2, 2), null);
        Linear identity = new Linear(Array.fromFloats(new float[] {1, 0, 0, 1}, 2, 2), null);
        MixtureOfExperts moe = new MixtureOfExperts(gate, List.of(new MixtureOfExperts.Expert(identity, identity),
                new MixtureOfExperts.Expert(identity, new Linear(Array.fromFloats(new float[] {2, 0, 0, 2}, 2, 2), null))));
        Array x = Array.fromFloats(new float[] {3, 1, 1, 2}, 2, 2);
        MixtureOfExperts.Routing routing = moe.route(x);
        assertThat(routing.expert()).containsExactly(0, 1);
        float p0 = (float) (1 / (1 + Math.exp(-2))), p1 = (float) (1 / (1 + Math.exp(-1)));
        assertThat(routing.weight()[0]).isCloseTo(p0, within(1e-6f));
        assertThat(routing.weight()[1]).isCloseTo(p1, within(1e-6f));
        assertThat(moe.forward(x).toFloatArray()).containsExactly(new float[] {3 * p0, 1 * p0, 2 * p1, 4 * p1}, within(1e-6f));
        assertThatThrownBy(() -> new MixtureOfExperts(gate, List.of(new MixtureOfExperts.Expert(identity, identity))))
                .hasMessageContaining("the gate scores 2 experts but 1 are given");
    }
}
