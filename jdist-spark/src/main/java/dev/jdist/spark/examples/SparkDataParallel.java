package dev.jdist.spark.examples;

import dev.jdist.Array;
import dev.jdist.Group;
import dev.jdist.nn.Activations;
import dev.jdist.nn.Gradients;
import dev.jdist.nn.Linear;
import dev.jdist.nn.Sgd;
import dev.jdist.spark.JdistSpark;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32;

/**
 * Data-parallel training inside Spark (examples/DataParallel.java, with the rows in an RDD): the data set is an RDD
 * of examples split into partitions; one barrier task per partition trains the same MLP on its rows and averages the
 * gradients of every step with {@link Gradients#average}. Every task ends with the same weights, which equal those
 * of the 1-partition run up to float rounding. The program runs both and compares them.
 *
 * <pre>
 *   spark-submit --class dev.jdist.spark.examples.SparkDataParallel --jars jdist-core.jar jdist-spark.jar [partitions]
 * </pre>
 */
public final class SparkDataParallel {
    public static final int EXAMPLES = 960;    // divides by 1, 2, 3, 4, 5, 6, 8
    static final int FEATURES = 32;
    static final int HIDDEN = 32;
    static final int ITERATIONS = 200;
    static final float LEARNING_RATE = 0.05f;

    /** One example: features and target. */
    public record Example(float[] x, float y) implements Serializable {}

    /** What one task reports: its place, its rows, the losses and the trained weights (all parameters, flattened). */
    public record Result(int rank, int size, int rows, double initialLoss, double finalLoss, float[] weights)
            implements Serializable {
        public long weightsCrc() {
            CRC32 crc = new CRC32();
            Array a = Array.fromFloats(weights, weights.length);
            crc.update(a.toBytes());
            return crc.getValue();
        }
    }

    private SparkDataParallel() {}

    /** The same synthetic regression data as examples/DataParallel.java: y = X·w* + 0.01·noise, seed 42. */
    public static List<Example> dataset() {
        Random data = new Random(42);
        float[] wStar = gaussian(data, FEATURES, (float) (1 / Math.sqrt(FEATURES)));
        float[] x = gaussian(data, EXAMPLES * FEATURES, 1f);
        float[] noise = gaussian(data, EXAMPLES, 0.01f);
        List<Example> rows = new ArrayList<>(EXAMPLES);
        for (int i = 0; i < EXAMPLES; i++) {
            float[] xi = Arrays.copyOfRange(x, i * FEATURES, (i + 1) * FEATURES);
            float s = 0;
            for (int j = 0; j < FEATURES; j++) s += xi[j] * wStar[j];
            rows.add(new Example(xi, s + noise[i]));
        }
        return rows;
    }

    /**
     * Trains on {@code partitions} barrier tasks (one per partition of the data set, split into contiguous slices)
     * and returns every task's result by rank.
     */
    public static List<Result> train(JavaSparkContext spark, int partitions, Map<String, String> settings) {
        if (partitions < 1 || EXAMPLES % partitions != 0) {
            throw new IllegalArgumentException("SparkDataParallel: " + EXAMPLES + " examples do not divide among " + partitions
                    + " partitions; use a count that divides " + EXAMPLES);
        }
        JavaRDD<Example> data = spark.parallelize(dataset(), partitions);
        return JdistSpark.runOnPartitions(data, settings, SparkDataParallel::trainPartition);
    }

    /** One task: the model from seed 0, {@value #ITERATIONS} SGD steps on this partition's rows, gradients averaged. */
    static Result trainPartition(Group group, Iterator<Example> rowsIn) {
        List<Example> mine = new ArrayList<>();
        rowsIn.forEachRemaining(mine::add);
        int rows = mine.size();
        float[] xLocal = new float[rows * FEATURES];
        float[] yLocal = new float[rows];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(mine.get(i).x(), 0, xLocal, i * FEATURES, FEATURES);
            yLocal[i] = mine.get(i).y();
        }
        Array xs = Array.fromFloats(xLocal, rows, FEATURES);

        Random init = new Random(0);
        Linear hidden = Linear.random(FEATURES, HIDDEN, true, init);
        Linear output = Linear.random(HIDDEN, 1, true, init);
        List<Array> parameters = new ArrayList<>(hidden.parameters());
        parameters.addAll(output.parameters());
        Sgd sgd = new Sgd(LEARNING_RATE);

        double initialLoss = globalLoss(group, localLoss(hidden, output, xs, yLocal));
        for (int it = 0; it < ITERATIONS; it++) {
            // forward, then the backward pass by hand for loss = 0.5·mean((p − y)²)
            Array h = hidden.forward(xs);
            Array a = Activations.relu(h);
            float[] p = output.forward(a).toFloatArray();
            float[] dp = new float[rows];
            for (int i = 0; i < rows; i++) dp[i] = (p[i] - yLocal[i]) / rows;
            Linear.Grads gOut = output.backward(a, Array.fromFloats(dp, rows, 1));
            Linear.Grads gHidden = hidden.backward(xs, Activations.reluBackward(h, gOut.input()));
            List<Array> grads = new ArrayList<>(gHidden.parameters());
            grads.addAll(gOut.parameters());
            sgd.update(parameters, Gradients.average(grads, group));
        }
        double finalLoss = globalLoss(group, localLoss(hidden, output, xs, yLocal));
        return new Result(group.rank(), group.size(), rows, initialLoss, finalLoss, flatten(parameters));
    }

    static float localLoss(Linear hidden, Linear output, Array xs, float[] y) {
        float[] p = output.forward(Activations.relu(hidden.forward(xs))).toFloatArray();
        float loss = 0;
        for (int i = 0; i < p.length; i++) {
            float e = p[i] - y[i];
            loss += 0.5f * e * e;
        }
        return loss / p.length;
    }

    static double globalLoss(Group group, float local) {
        return group.allSum(Array.of(local)).toFloatArray()[0] / group.size();
    }

    static float[] gaussian(Random rng, int count, float scale) {
        float[] v = new float[count];
        for (int i = 0; i < count; i++) v[i] = (float) rng.nextGaussian() * scale;
        return v;
    }

    static float[] flatten(List<Array> arrays) {
        int total = 0;
        for (Array a : arrays) total += (int) a.size();
        float[] all = new float[total];
        int off = 0;
        for (Array a : arrays) {
            float[] v = a.toFloatArray();
            System.arraycopy(v, 0, all, off, v.length);
            off += v.length;
        }
        return all;
    }

    /** Largest element-wise difference between two weight vectors of one model. */
    public static double maxDifference(float[] a, float[] b) {
        double max = 0;
        for (int i = 0; i < a.length; i++) max = Math.max(max, Math.abs((double) a[i] - b[i]));
        return max;
    }

    public static void main(String[] args) {
        int partitions = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        try (JavaSparkContext spark = new JavaSparkContext(new SparkConf().setAppName("jdist SparkDataParallel"))) {
            List<Result> results = train(spark, partitions, Map.of());
            List<Result> single = train(spark, 1, Map.of());
            for (Result r : results) {
                System.out.printf("rank %d of %d: %d rows, weights crc32=%08x%n", r.rank(), r.size(), r.rows(), r.weightsCrc());
            }
            Result r0 = results.getFirst();
            boolean identical = results.stream().allMatch(r -> Arrays.equals(r.weights(), r0.weights()));
            double diff = maxDifference(r0.weights(), single.getFirst().weights());
            System.out.printf("loss %.8f after %d iterations (initial %.8f); %d tasks x %d examples%n",
                    r0.finalLoss(), ITERATIONS, r0.initialLoss(), r0.size(), r0.rows());
            System.out.printf("1-partition run: loss %.8f; largest weight difference %.3g%n", single.getFirst().finalLoss(), diff);
            if (!identical) {
                System.err.println("SparkDataParallel: the tasks ended with different weights");
                System.exit(1);
            }
            System.out.printf("weights identical on all %d tasks%n", r0.size());
        }
    }
}
