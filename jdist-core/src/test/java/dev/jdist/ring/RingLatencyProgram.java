package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

/**
 * Measures the small-message all_sum latency (not a test; run by hand, see docs/backends.md):
 * {@code MLX_RANK=r MLX_HOSTFILE=... java ... dev.jdist.ring.RingLatencyProgram [elements] [iterations]}.
 */
public final class RingLatencyProgram {
    public static void main(String[] args) {
        int elements = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        int iterations = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
        Group g = Distributed.init(true, "ring");
        Array x = Array.ones(DType.FLOAT32, elements);
        Array out = Array.zeros(DType.FLOAT32, elements);
        for (int i = 0; i < Math.max(1, Math.min(2000, iterations / 5)); i++) g.allReduceInto(x, out, dev.jdist.ReduceOp.SUM);
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) g.allReduceInto(x, out, dev.jdist.ReduceOp.SUM);
            long t1 = System.nanoTime();
            if (g.rank() == 0) {
                System.out.printf("all_sum %d x float32 (%d B) on %d ranks: %.2f us per op, %.1f MB/s algbw (%d ops)%n", elements, 4L * elements,
                        g.size(), (t1 - t0) / 1e3 / iterations, 4.0 * elements * iterations / ((t1 - t0) / 1e3), iterations);
            }
        }
        Distributed.reset();
    }
}
