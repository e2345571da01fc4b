package example;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

/**
 * One program, started any way a JVM is started: {@code java -cp} with MLX_RANK and MLX_HOSTFILE set,
 * {@code jdist launch}, {@code mpirun} or {@code srun}. Rank r contributes r + 1; every rank checks the sum
 * (1 + 2 + ... + size) and the gathered ranks, and prints one line.
 */
public class AllSumCheck {
    public static void main(String[] args) {
        Group world = Distributed.init();
        int rank = world.rank(), size = world.size();
        Array sum = Distributed.allSum(Array.full(DType.FLOAT32, rank + 1, 1000));
        Array ranks = Distributed.allGather(Array.of(rank));
        boolean ok = sum.getDouble(0) == size * (size + 1) / 2.0 && sum.getDouble(999) == sum.getDouble(0);
        for (int r = 0; r < size; r++) ok &= ranks.getLong(r) == r;
        System.out.print("rank " + rank + " of " + size + " (" + world.backend() + "): all_sum "
                + (ok ? "ok" : "WRONG: " + sum + " " + ranks) + "\n");   // one write: whole lines under a launcher
        if (!ok) System.exit(1);
    }
}
