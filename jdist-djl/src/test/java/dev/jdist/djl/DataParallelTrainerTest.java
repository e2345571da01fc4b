package dev.jdist.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.Trainer;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The gradient buckets over in-process rings (one thread per rank, PyTorch on the CPU), and the trainer on one rank.
 * Training on several ranks needs a process per rank (PyTorch allows one gradient collector per process): that is
 * {@code DigitsIT}.
 */
@Timeout(120)
class DataParallelTrainerTest {
    static final int IN = 8, HIDDEN = 16, CLASSES = 3, ROWS = 32;

    @TempDir
    Path dir;

    @Test
    void averageIsTheMeanOverRanksInFewCollectives() throws Exception {
        Path hosts = TestModels.hostfile(dir, 3);
        List<float[][]> out = RankThreads.run(3, 60, rank -> {
            try (Group g = TestModels.ring(hosts, rank); NDManager m = NDManager.newBaseManager();
                 GradientBuckets b = new GradientBuckets(g, GradientBuckets.DEFAULT_BUCKET_BYTES, null);
                 GradientBuckets small = new GradientBuckets(g, 16, null)) {
                List<NDArray> xs = List.of(m.create(new float[] {rank, 2 * rank}), m.create(new float[][] {{1 + rank}, {3}}),
                        m.create(new float[] {rank * 0.5f, 1, 2, 3, 4}));
                b.average(xs);
                List<NDArray> ys = List.of(m.create(new float[] {rank, 1}), m.create(new float[] {rank, 2, 3, 4, 5}), m.create(new float[] {7}));
                small.average(ys);
                return new float[][] {xs.get(0).toFloatArray(), xs.get(1).toFloatArray(), xs.get(2).toFloatArray(),
                        ys.get(0).toFloatArray(), ys.get(1).toFloatArray(), ys.get(2).toFloatArray(),
                        {b.collectives(), small.collectives()}, {xs.get(1).getShape().get(0), xs.get(1).getShape().get(1)}};
            }
        });
        for (float[][] r : out) {
            assertThat(r[0]).containsExactly(1, 2);
            assertThat(r[1]).containsExactly(2, 3);
            assertThat(r[2]).containsExactly(0.5f, 1, 2, 3, 4);
            assertThat(r[3]).containsExactly(1, 1);
            assertThat(r[4]).containsExactly(1, 2, 3, 4, 5);
            assertThat(r[5]).containsExactly(7);
            assertThat(r[6]).as("one all-reduce for three arrays at 32 MiB; 16-byte buckets close after 2 and 5 floats")
                    .containsExactly(1, 2);
            assertThat(r[7]).as("shape kept").containsExactly(2, 1);
        }
    }

    @Test
    void bfloat16OnTheWireRoundsButAverages() throws Exception {
        Path hosts = TestModels.hostfile(dir, 2);
        List<float[]> out = RankThreads.run(2, 60, rank -> {
            try (Group g = TestModels.ring(hosts, rank); NDManager m = NDManager.newBaseManager();
                 GradientBuckets b = new GradientBuckets(g, 1 << 20, DType.BFLOAT16)) {
                NDArray x = m.create(new float[] {1.0f + rank, 1.001f, 300.7f});
                b.average(List.of(x));
                assertThat(x.getDataType()).isEqualTo(ai.djl.ndarray.types.DataType.FLOAT32);
                return x.toFloatArray();
            }
        });
        for (float[] r : out) {
            assertThat(r[0]).isEqualTo(1.5f);
            assertThat(r[1]).isCloseTo(1.001f, within(0.01f)).isNotEqualTo(1.001f);
            assertThat(r[2]).isCloseTo(300.7f, within(2f));
        }
    }

    @Test
    void broadcastGivesEveryRankRankZerosParametersAndKeepsThemTrainable() throws Exception {
        Path hosts = TestModels.hostfile(dir, 3);
        List<float[]> out = RankThreads.run(3, 60, rank -> {
            try (Group g = TestModels.ring(hosts, rank); NDManager m = NDManager.newBaseManager();
                 GradientBuckets b = new GradientBuckets(g, 8, null)) {
                NDArray w = m.create(new float[][] {{rank, rank + 1}, {-rank, 5}});
                NDArray bias = m.create(new float[] {10f * rank});
                w.setRequiresGradient(true);
                bias.setRequiresGradient(true);
                b.broadcastFromRank0(List.of(w, bias));
                assertThat(w.hasGradient()).isTrue();
                assertThat(b.collectives()).as("8-byte buckets: one per array here").isEqualTo(2);
                return TestModels.concat(w.toFloatArray(), bias.toFloatArray());
            }
        });
        for (float[] r : out) assertThat(r).containsExactly(0, 1, 0, 5, 0);
    }

    @Test
    void onOneRankItIsPlainDjlBitForBit() throws Exception {
        List<float[]> runs = new ArrayList<>();
        for (boolean jdist : new boolean[] {false, true}) {
            try (Model model = TestModels.mlp(IN, HIDDEN, CLASSES);
                 Trainer t = jdist ? new DataParallelTrainer(model, TestModels.config(), Distributed.init())
                         : model.newTrainer(TestModels.config())) {
                TestModels.seed(5);
                t.initialize(new Shape(1, IN));
                NDList data = TestModels.rows(t.getManager(), 0, ROWS, IN, CLASSES);
                for (int s = 0; s < 5; s++) TestModels.trainStep(t, data.get(0), data.get(1));
                runs.add(TestModels.parameters(model));
            }
        }
        assertThat(runs.get(1)).containsExactly(runs.get(0));
    }
}
