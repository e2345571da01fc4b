import dev.jdist.*;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Out-of-place all_sum in a loop against allReduceInto with a reused output: time per call, peak RSS, GCs.
 * {@code bin/jdist launch -n 2 bench/alloc/AllSumLoop.java [MiB=64] [allSum calls=30]}; rank 0 prints one line.
 * Compare with {@code JDIST_ARRAY_CACHE_BYTES=0} (array cache and GC nudge off).
 */
public class AllSumLoop {
    public static void main(String[] args) throws Exception {
        int mib = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        int calls = args.length > 1 ? Integer.parseInt(args[1]) : 30;
        Group g = Distributed.init();
        Array x = Array.zeros(DType.FLOAT32, mib << 18);
        Array o = Array.zeros(DType.FLOAT32, mib << 18);
        for (int i = 0; i < 5; i++) g.allReduceInto(x, o, ReduceOp.SUM);
        long t0 = System.nanoTime();
        for (int i = 0; i < 30; i++) g.allReduceInto(x, o, ReduceOp.SUM);
        long t1 = System.nanoTime();
        for (int i = 0; i < calls; i++) { Array y = g.allSum(x); }
        long t2 = System.nanoTime();
        if (g.rank() == 0) {
            String hwm = Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("VmHWM")).findFirst().orElse("VmHWM: ?").replaceAll("\\s+", " ");
            long gcs = 0, gcMs = 0;
            for (var b : ManagementFactory.getGarbageCollectorMXBeans()) { gcs += b.getCollectionCount(); gcMs += b.getCollectionTime(); }
            System.out.printf("%d MiB: allReduceInto %.1f ms/op, allSum %.1f ms/op (%d calls), %s, %d GCs %d ms, %s=%s%n",
                    mib, (t1 - t0) / 30e6, (t2 - t1) / 1e6 / calls, calls, hwm, gcs, gcMs,
                    "JDIST_ARRAY_CACHE_BYTES", System.getenv().getOrDefault("JDIST_ARRAY_CACHE_BYTES", "(default)"));
        }
        g.close();
    }
}
