package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.nn.MatrixKernels;
import dev.jdist.reduce.Kernels;
import dev.jdist.reduce.Reducer;
import dev.jdist.ring.RingTestSupport;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * What {@link PlainJvmIT} runs in a JVM started with no options at all ({@code java -cp CLASSPATH
 * dev.jdist.PlainJvmProgram}): every reduction kernel, the matrix kernels, a large array, a 2-rank ring
 * and the mpi backend's availability. Prints one line per check; exits 1 on a wrong value.
 */
public final class PlainJvmProgram {
    public static void main(String[] args) throws Exception {
        System.out.println("vector module in the JVM: " + ModuleLayer.boot().findModule(Kernels.VECTOR_MODULE).isPresent());
        System.out.println("kernels: " + Kernels.describe());
        boolean ok = true;
        for (DType t : DType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                Array acc = Array.full(t, 1, 5000), inc = Array.full(t, 1, 5000);
                Reducer.reduce(op, t, acc.segment(), 0, inc.segment(), 0, 5000);
                double want = op == ReduceOp.SUM && t != DType.BOOL ? 2 : 1;
                if (acc.getDouble(4999) != want || acc.getDouble(0) != want) {
                    System.out.println("WRONG: " + t + " " + op + " gave " + acc.getDouble(0));
                    ok = false;
                }
            }
        }
        System.out.println("reductions: every dtype and op ran");
        float[] out = new float[4];
        MatrixKernels.matmul(new float[] {1, 2, 3, 4}, 2, 2, new float[] {1, 0, 0, 1}, 2, out);
        System.out.println("matmul: " + java.util.Arrays.toString(out));
        Array big = Array.zeros(DType.FLOAT32, 1 << 20);   // 4 MiB: the array cache's size class, here without native access
        System.out.println("large array: " + big.nbytes() + " bytes");

        Path dir = Files.createTempDirectory("plain-jvm");
        Path hostfile = RingTestSupport.hostfile(dir, 2, 1);
        List<Double> sums = RingTestSupport.onEveryRank(hostfile, 2, Map.of(), impl -> {
            Group g = new Group(impl, OperationTrace.WORLD);
            return g.allSum(Array.full(DType.FLOAT32, g.rank() + 1, 100_000)).getDouble(99_999);
        });
        System.out.println("ring all_sum: " + sums);
        ok &= sums.equals(List.of(3.0, 3.0));
        System.out.println("mpi: " + Distributed.unavailableReason("mpi").orElse("available"));
        Files.deleteIfExists(hostfile);
        Files.deleteIfExists(dir);
        System.exit(ok ? 0 : 1);
    }
}
