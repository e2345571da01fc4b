import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupAccess;

import java.util.Arrays;

/**
 * The jdist side of bench/mpi/compare.sh: all_sum of float32 over the mpi backend, timed per call.
 * Usage (under mpirun): java ... MpiAllSumBench.java <bytes> <iterations> <warmup>; prints on rank 0
 *   jdist-binding <bytes> <iterations> <median_us> <min_us>   (GroupImpl.allReduce into a preallocated output)
 *   jdist-self    <bytes> <iterations> <median_us> <min_us>   (binding on a 1-rank split: MPI_Allreduce with no peer)
 *   jdist-into    <bytes> <iterations> <median_us> <min_us>   (Group.allReduceInto: public API, preallocated output)
 *   jdist-allsum  <bytes> <iterations> <median_us> <min_us>   (Group.allSum: also allocates the output each call)
 */
public class MpiAllSumBench {
    public static void main(String[] args) {
        long bytes = args.length > 0 ? Long.parseLong(args[0]) : 1 << 20;
        int iters = args.length > 1 ? Integer.parseInt(args[1]) : 50;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        Group world = Distributed.init(true, "mpi");
        int n = Math.toIntExact(bytes / 4);
        Array in = Array.ones(DType.FLOAT32, n);
        Array out = Array.zeros(DType.FLOAT32, n);

        double[] binding = new double[iters];
        for (int i = 0; i < warmup + iters; i++) {
            long t0 = System.nanoTime();
            GroupAccess.impl(world).allReduce(in, out, ReduceOp.SUM);
            if (i >= warmup) binding[i - warmup] = (System.nanoTime() - t0) / 1e3;
        }
        check(world, out, "binding");
        double[] self = new double[iters];
        try (Group alone = world.split(world.rank())) {
            for (int i = 0; i < warmup + iters; i++) {
                long t0 = System.nanoTime();
                GroupAccess.impl(alone).allReduce(in, out, ReduceOp.SUM);
                if (i >= warmup) self[i - warmup] = (System.nanoTime() - t0) / 1e3;
            }
            check(alone, out, "self");
        }
        double[] into = new double[iters];
        for (int i = 0; i < warmup + iters; i++) {
            long t0 = System.nanoTime();
            world.allReduceInto(in, out, ReduceOp.SUM);
            if (i >= warmup) into[i - warmup] = (System.nanoTime() - t0) / 1e3;
        }
        check(world, out, "allReduceInto");
        double[] allSum = new double[iters];
        for (int i = 0; i < warmup + iters; i++) {
            long t0 = System.nanoTime();
            out = world.allSum(in);
            if (i >= warmup) allSum[i - warmup] = (System.nanoTime() - t0) / 1e3;
        }
        check(world, out, "allSum");
        if (world.rank() == 0) {
            print("jdist-binding", bytes, binding);
            print("jdist-self", bytes, self);
            print("jdist-into", bytes, into);
            print("jdist-allsum", bytes, allSum);
        }
        Distributed.reset();
    }

    static void check(Group world, Array out, String what) {
        for (long i = 0; i < out.size(); i += 997) {
            if (out.getDouble(i) != world.size()) {
                System.err.println(what + ": element " + i + " is " + out.getDouble(i) + ", expected " + world.size());
                System.exit(1);
            }
        }
    }

    static void print(String name, long bytes, double[] t) {
        Arrays.sort(t);
        System.out.printf("%s %d %d %.2f %.2f%n", name, bytes, t.length, t[t.length / 2], t[0]);
    }
}
