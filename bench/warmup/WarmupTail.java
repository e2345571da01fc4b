import dev.jdist.*;
/**
 * Where a size's slow calls fall in time (docs/benchmarks-log.md, "The 1 MiB tail is the JIT's warm-up too"): ELEMENTS
 * float32 all_sums ({@code allReduceInto}), WARMUP untimed then CALLS timed one by one; prints, per rank, the median,
 * p90, p99 and maximum, the JVM's uptime when the timed loop starts, the first slow calls (over 1 ms: index, ms into
 * the loop, duration) and how many calls of each block of 1000 were slow.
 *
 * <pre>bin/jdist launch -n 2 bench/warmup/WarmupTail.java ELEMENTS WARMUP CALLS</pre>
 */
public class WarmupTail {
    public static void main(String[] args) throws Exception {
        int elements = Integer.parseInt(args[0]);
        int warmup = Integer.parseInt(args[1]);
        int calls = Integer.parseInt(args[2]);
        Group g = Distributed.init(true, "ring");
        Array x = Array.ones(DType.FLOAT32, elements);
        Array y = Array.zeros(DType.FLOAT32, elements);
        for (int i = 0; i < warmup; i++) g.allReduceInto(x, y, ReduceOp.SUM);
        long uptime = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime();
        long[] took = new long[calls];
        long[] at = new long[calls];
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            long t0 = System.nanoTime();
            g.allReduceInto(x, y, ReduceOp.SUM);
            took[i] = System.nanoTime() - t0;
            at[i] = t0 - start;
        }
        StringBuilder slow = new StringBuilder();
        int count = 0;
        for (int i = 0; i < calls; i++) {
            if (took[i] > 1_000_000 && ++count <= 8) slow.append(String.format(" %d@%.1fms:%.2f", i, at[i] / 1e6, took[i] / 1e6));
        }
        slow.append("; slow per block of 1000:");
        for (int b = 0; b < calls; b += 1000) {
            int k = 0;
            for (int i = b; i < Math.min(calls, b + 1000); i++) if (took[i] > 1_000_000) k++;
            slow.append(' ').append(k);
        }
        long[] sorted = took.clone();
        java.util.Arrays.sort(sorted);
        System.out.printf("rank %d (timed loop from uptime %d ms): median %.0f us, p90 %.0f, p99 %.0f, max %.0f; over 1 ms: %d;%s%n",
                g.rank(), uptime, sorted[calls / 2] / 1e3, sorted[calls * 9 / 10] / 1e3, sorted[calls * 99 / 100] / 1e3,
                sorted[calls - 1] / 1e3, count, slow);
        g.close();
    }
}
