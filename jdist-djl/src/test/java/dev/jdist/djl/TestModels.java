package dev.jdist.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingConfig;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.testing.FreePorts;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/** A small MLP, its training step, and in-process jdist rings for the unit tests. */
final class TestModels {
    private TestModels() {}

    static Model mlp(int in, int hidden, int out) {
        Model model = Model.newInstance("mlp");
        SequentialBlock block = new SequentialBlock()
                .add(Linear.builder().setUnits(hidden).build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(out).build());
        model.setBlock(block);
        return model;
    }

    static TrainingConfig config() {
        return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f)).build());
    }

    /** One forward, backward and step on (x, y). */
    static void trainStep(Trainer trainer, NDArray x, NDArray y) {
        try (GradientCollector gc = trainer.newGradientCollector()) {
            NDArray pred = trainer.forward(new NDList(x)).singletonOrThrow();
            NDArray loss = trainer.getLoss().evaluate(new NDList(y), new NDList(pred));
            gc.backward(loss);
        }
        trainer.step();
    }

    /** Every parameter's float32 values, concatenated in block order. */
    static float[] parameters(Model model) {
        return model.getBlock().getParameters().values().stream()
                .map(p -> p.getArray().toFloatArray())
                .reduce(new float[0], TestModels::concat);
    }

    static float[] concat(float[] a, float[] b) {
        float[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** Random inputs and labels of rows [from, to) of one fixed data set (seed 7). */
    static NDList rows(NDManager m, int from, int to, int in, int classes) {
        java.util.Random r = new java.util.Random(7);
        float[] x = new float[to * in];
        float[] y = new float[to];
        for (int i = 0; i < to; i++) {
            for (int j = 0; j < in; j++) x[i * in + j] = (float) r.nextGaussian();
            y[i] = r.nextInt(classes);
        }
        return new NDList(
                m.create(java.util.Arrays.copyOfRange(x, from * in, to * in), new ai.djl.ndarray.types.Shape(to - from, in)),
                m.create(java.util.Arrays.copyOfRange(y, from, to)));
    }

    /** A hostfile for an n-rank ring on free loopback ports. */
    static Path hostfile(Path dir, int n) throws IOException {
        Path f = dir.resolve("hosts-" + n + "-" + System.nanoTime() + ".json");
        Files.writeString(f, IntStream.of(FreePorts.distinct(n)).mapToObj(p -> "[\"127.0.0.1:" + p + "\"]")
                .collect(Collectors.joining(",", "[", "]")));
        return f;
    }

    static Group ring(Path hostfile, int rank) {
        return Distributed.newGroup("ring", Map.of("MLX_RANK", String.valueOf(rank), "MLX_HOSTFILE", hostfile.toString(),
                "JDIST_TIMEOUT", "60"));
    }

    static void seed(long seed) {
        Engine.getInstance().setRandomSeed((int) seed);
    }
}
