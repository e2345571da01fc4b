import dev.jdist.Array;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.checkpoint.Checkpointer;
import dev.jdist.checkpoint.Checkpoints;
import dev.jdist.checkpoint.TrainingState;
import dev.jdist.nn.Activations;
import dev.jdist.nn.Gradients;
import dev.jdist.nn.Linear;
import dev.jdist.nn.Sgd;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.zip.CRC32;

/**
 * Data parallelism (MLX's distributed_data_parallel.py, scaled down): every rank makes the same
 * synthetic regression data and the same MLP from fixed seeds, trains on its own rows, and averages
 * the gradients every step. The loss equals the 1-process run's (up to float rounding) and every
 * rank ends with bit-identical weights, which the program checks.
 *
 *     jdist launch -n 4 examples/DataParallel.java
 *
 * With {@code DP_CHECKPOINTS=DIR} every rank saves the training state in DIR/rank-R every {@code DP_SAVE_EVERY}
 * steps (default 20), and a job that {@code jdist launch --max-restarts K} starts again resumes from the last step all
 * ranks saved; the final weights equal those of a run without failure, bit for bit (docs/training.md, "Surviving a
 * lost rank"). {@code DP_FAULT=RANK:STEP:KILL|STOP} is a drill: on the first start only, that rank sends itself
 * SIGKILL or SIGSTOP before that step (the chaos script bench/chaos/restart.sh uses it).
 *
 *     DP_CHECKPOINTS=/tmp/dp jdist launch -n 4 --max-restarts 2 examples/DataParallel.java
 */
public class DataParallel {
    static final int EXAMPLES = 960;    // divides by 1, 2, 3, 4, 5, 6, 8
    static final int FEATURES = 32;
    static final int HIDDEN = 32;
    static final int ITERATIONS = 200;
    static final float LEARNING_RATE = 0.05f;

    public static void main(String[] args) throws Exception {
        Group world = Distributed.init();
        int n = world.size();
        int rank = world.rank();
        if (EXAMPLES % n != 0) {
            System.err.println("DataParallel: " + EXAMPLES + " examples do not divide among " + n
                    + " ranks; run with a rank count that divides " + EXAMPLES);
            System.exit(2);
        }

        // The same data on every rank: y = X·w* + 0.01·noise.
        Random data = new Random(42);
        float[] wStar = gaussian(data, FEATURES, (float) (1 / Math.sqrt(FEATURES)));
        float[] x = gaussian(data, EXAMPLES * FEATURES, 1f);
        float[] noise = gaussian(data, EXAMPLES, 0.01f);
        float[] y = new float[EXAMPLES];
        for (int i = 0; i < EXAMPLES; i++) {
            float s = 0;
            for (int j = 0; j < FEATURES; j++) s += x[i * FEATURES + j] * wStar[j];
            y[i] = s + noise[i];
        }

        // This rank's rows.
        int rows = EXAMPLES / n;
        float[] xLocal = new float[rows * FEATURES];
        float[] yLocal = new float[rows];
        System.arraycopy(x, rank * rows * FEATURES, xLocal, 0, rows * FEATURES);
        System.arraycopy(y, rank * rows, yLocal, 0, rows);
        Array xs = Array.fromFloats(xLocal, rows, FEATURES);

        // The same model on every rank: MLP FEATURES -> HIDDEN -> 1 with ReLU.
        Random init = new Random(0);
        Linear hidden = Linear.random(FEATURES, HIDDEN, true, init);
        Linear output = Linear.random(HIDDEN, 1, true, init);
        List<Array> parameters = new ArrayList<>(hidden.parameters());
        parameters.addAll(output.parameters());
        Sgd sgd = new Sgd(LEARNING_RATE);

        // Resume: the ranks agree on the newest step they all saved and load it (every rank has the same state).
        String checkpoints = System.getenv("DP_CHECKPOINTS");
        Checkpointer saves = checkpoints == null || checkpoints.isEmpty() ? null
                : Checkpointer.forRank(Path.of(checkpoints), rank, 2);
        int saveEvery = Integer.parseInt(System.getenv().getOrDefault("DP_SAVE_EVERY", "20"));
        int first = 0;
        if (saves != null) {
            Optional<TrainingState> resumed = Checkpoints.resume(world, saves);
            if (resumed.isPresent()) {
                TrainingState state = resumed.get();
                for (int i = 0; i < parameters.size(); i++) {
                    float[] v = state.floatArray("p" + i);
                    java.lang.foreign.MemorySegment.copy(v, 0, parameters.get(i).segment(),
                            java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0, v.length);
                }
                first = (int) state.step();
            }
            line(System.out, "rank %d: restart %d, starting at step %d", rank, Distributed.restartNumber(), first);
        }
        String[] fault = System.getenv().getOrDefault("DP_FAULT", "").split(":");

        double initialLoss = globalLoss(world, localLoss(hidden, output, xs, yLocal));
        long start = System.nanoTime();
        for (int it = first; it < ITERATIONS; it++) {
            if (fault.length == 3 && Integer.parseInt(fault[0]) == rank && Integer.parseInt(fault[1]) == it
                    && Distributed.restartNumber() == 0) {
                line(System.out, "rank %d: SIG%s to myself before step %d (DP_FAULT)", rank, fault[2], it);
                new ProcessBuilder("kill", "-" + fault[2], Long.toString(ProcessHandle.current().pid())).start().waitFor();
            }
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
            // one all_sum for all four gradients (they fit in one 32 MiB group), divided by n
            sgd.update(parameters, Gradients.average(grads, world));
            if (saves != null && Checkpointer.due(it + 1, saveEvery)) {
                TrainingState.Builder state = TrainingState.at(it + 1).meta("data seed", 42).meta("init seed", 0);
                for (int i = 0; i < parameters.size(); i++) state.put("p" + i, parameters.get(i).toFloatArray());
                saves.save(state.build());
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;

        // Every rank takes part in the final all_sum (a rank that skipped it would leave the others waiting).
        double finalLoss = globalLoss(world, localLoss(hidden, output, xs, yLocal));

        // Identical weights everywhere: the element-wise max and min over ranks must equal our own weights.
        Array flat = concat(parameters);
        Array max = world.allMax(flat);
        Array min = world.allMin(flat);
        boolean identical = java.util.Arrays.equals(max.toBytes(), flat.toBytes())
                && java.util.Arrays.equals(min.toBytes(), flat.toBytes());
        CRC32 crc = new CRC32();
        crc.update(flat.toBytes());
        line(System.out, "rank %d of %d: weights crc32=%08x", rank, n, crc.getValue());
        if (rank == 0) {
            line(System.out, "loss %.8f after %d iterations (initial %.8f); %d ranks x %d examples; %.1f it/s",
                    finalLoss, ITERATIONS, initialLoss, n, rows, (ITERATIONS - first) / seconds);
        }
        if (!identical) {
            line(System.err, "rank %d: weights differ from another rank's after training", rank);
            System.exit(1);
        }
        if (rank == 0) line(System.out, "weights identical on all %d ranks", n);
    }

    /** 0.5·mean((model(x) − y)²) over this rank's rows. */
    static float localLoss(Linear hidden, Linear output, Array xs, float[] y) {
        float[] p = output.forward(Activations.relu(hidden.forward(xs))).toFloatArray();
        float loss = 0;
        for (int i = 0; i < p.length; i++) {
            float e = p[i] - y[i];
            loss += 0.5f * e * e;
        }
        return loss / p.length;
    }

    /** all_sum(local loss) / n, computed by every rank. */
    static double globalLoss(Group world, float local) {
        return world.allSum(Array.of(local)).toFloatArray()[0] / world.size();
    }

    static float[] gaussian(Random rng, int count, float scale) {
        float[] v = new float[count];
        for (int i = 0; i < count; i++) v[i] = (float) rng.nextGaussian() * scale;
        return v;
    }

    static Array concat(List<Array> arrays) {
        int total = 0;
        for (Array a : arrays) total += (int) a.size();
        float[] all = new float[total];
        int off = 0;
        for (Array a : arrays) {
            float[] v = a.toFloatArray();
            System.arraycopy(v, 0, all, off, v.length);
            off += v.length;
        }
        return Array.fromFloats(all, total);
    }

    /** Prints one whole line with a single write, so that lines of different ranks never mix under {@code jdist launch}. */
    static void line(java.io.PrintStream out, String format, Object... args) {
        out.print(String.format(format + "%n", args));
    }
}
