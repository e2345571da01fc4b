package dev.jdist.mpi;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

/**
 * The program {@code MpiBesideIT} runs under {@code mpirun}: forms the MPI group, says whether it got the job table (the
 * ranks met beside the group) and whether the watch runs, checks three all_sums and closes. Prints
 * {@code TABLE <rank> <yes|no>} and {@code OK <rank>}.
 */
public final class MpiBesideProgram {
    public static void main(String[] args) {
        Group world = Distributed.init(true, "mpi");
        int r = world.rank();
        int n = world.size();
        System.out.println("TABLE " + r + " " + (world.jobTable().isPresent() ? "yes" : "no"));
        for (int i = 0; i < 3; i++) {
            Array sum = world.allSum(Array.full(DType.FLOAT32, r + 1, 256));
            if (sum.getDouble(255) != n * (n + 1) / 2.0) throw new AssertionError("all_sum " + i + ": " + sum.getDouble(255));
        }
        System.out.println("OK " + r);
        System.out.flush();
        Distributed.reset();
    }
}
