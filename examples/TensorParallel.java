import dev.jdist.Array;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.nn.Activations;
import dev.jdist.nn.AllToShardedLinear;
import dev.jdist.nn.Linear;
import dev.jdist.nn.ShardedToAllLinear;

import java.util.Random;

/**
 * Tensor parallelism (MLX's distributed_tensor_parallel.py): an MLP 256 → 1024 → 256 with SiLU,
 * whose first layer keeps 1024/n output rows per rank and whose second layer keeps the matching
 * 1024/n input columns. One all_sum inside the second layer gives every rank the full output,
 * equal to the unsharded model's up to float rounding.
 *
 *     jdist launch -n 4 examples/TensorParallel.java
 */
public class TensorParallel {
    static final int IN = 256;
    static final int HIDDEN = 1024;
    static final int OUT = 256;
    static final int BATCH = 8;
    static final float TOLERANCE = 1e-4f;

    public static void main(String[] args) {
        Group world = Distributed.init();
        int n = world.size();
        if (HIDDEN % n != 0) {
            System.err.println("TensorParallel: the hidden size " + HIDDEN + " does not divide among " + n
                    + " ranks; run with a rank count that divides " + HIDDEN);
            System.exit(2);
        }

        // The same model and input on every rank.
        Random seed = new Random(0);
        Linear up = Linear.random(IN, HIDDEN, true, seed);
        Linear down = Linear.random(HIDDEN, OUT, true, seed);
        Random key = new Random(1);
        float[] xv = new float[BATCH * IN];
        for (int i = 0; i < xv.length; i++) xv[i] = (float) key.nextGaussian();
        Array x = Array.fromFloats(xv, BATCH, IN);
        float[] expected = down.forward(Activations.silu(up.forward(x))).toFloatArray();

        // Shard: rank r keeps rows of `up` and the matching columns of `down`.
        AllToShardedLinear upShard = AllToShardedLinear.fromLinear(up, world);
        ShardedToAllLinear downShard = ShardedToAllLinear.fromLinear(down, world);
        float[] y = downShard.forward(Activations.silu(upShard.forward(x))).toFloatArray();   // one all_sum

        float maxError = 0;
        double sum = 0;
        for (int i = 0; i < y.length; i++) {
            maxError = Math.max(maxError, Math.abs(y[i] - expected[i]));
            sum += y[i];
        }
        line(System.out, "rank %d of %d: max |y - expected| = %.3e", world.rank(), n, maxError);
        if (world.rank() == 0) {
            line(System.out, "sum(y) = %.6f over %d x %d outputs; %d ranks x %d hidden features",
                    sum, BATCH, OUT, n, HIDDEN / n);
        }
        if (!(maxError <= TOLERANCE)) {
            line(System.err, "rank %d: the sharded output differs from the unsharded one by %.3e (> %.0e)",
                    world.rank(), maxError, TOLERANCE);
            System.exit(1);
        }
    }

    /** Prints one whole line with a single write, so that lines of different ranks never mix under {@code jdist launch}. */
    static void line(java.io.PrintStream out, String format, Object... args) {
        out.print(String.format(format + "%n", args));
    }
}
