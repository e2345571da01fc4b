package dev.jdist.rendezvous;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.spi.JobTable;

import java.util.ArrayList;
import java.util.List;

/**
 * The unchanged program the cluster-start tests run under every environment: {@code Distributed.init()} and nothing
 * else about the job. Checks all_sum, all_gather, sum_scatter and send/recv values on this rank; prints
 * {@code rank r of n: OK (backend b, source s)} and {@code rank r table: <the address each rank published>} and exits
 * 0, or prints {@code FAILED: <class>: <message>} and exits 3.
 */
public final class ClusterCheckProgram {

    public static void main(String[] args) {
        Group world;
        try {
            world = Distributed.init();
        } catch (RuntimeException e) {
            System.out.println("FAILED: " + e.getClass().getSimpleName() + ": " + e.getMessage());
            System.out.flush();
            System.exit(3);
            return;
        }
        int r = world.rank();
        int n = world.size();
        List<String> errors = new ArrayList<>();
        try {
            Array sum = world.allSum(Array.full(DType.FLOAT32, r + 1, 1000));
            double expect = n * (n + 1) / 2.0;
            for (int i = 0; i < 1000; i += 97) if (sum.getDouble(i) != expect) errors.add("all_sum[" + i + "] = " + sum.getDouble(i));
            Array gathered = world.allGather(Array.full(DType.INT32, r, 3));
            for (int q = 0; q < n; q++) {
                if (gathered.getDouble(3L * q) != q) errors.add("all_gather block " + q + " = " + gathered.getDouble(3L * q));
            }
            Array scattered = world.sumScatter(Array.full(DType.INT64, 1, 2 * n));
            if (scattered.getDouble(0) != n) errors.add("sum_scatter = " + scattered.getDouble(0));
            if (n > 1) {
                int right = (r + 1) % n;
                int left = (r - 1 + n) % n;
                Array got;
                if (r % 2 == 0) {
                    world.send(Array.full(DType.INT32, r, 5), right);
                    got = world.recv(new int[] {5}, DType.INT32, left);
                } else {
                    got = world.recv(new int[] {5}, DType.INT32, left);
                    world.send(Array.full(DType.INT32, r, 5), right);
                }
                if (got.getDouble(4) != left) errors.add("recv from " + left + " = " + got.getDouble(4));
            }
        } catch (RuntimeException e) {
            errors.add(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        String source = world.jobTable().map(JobTable::source).orElse("none");
        if (!errors.isEmpty()) {
            System.out.println("rank " + r + " of " + n + ": WRONG " + errors);
            System.out.flush();
            System.exit(1);
        }
        // the addresses every rank published (what the ring connected to): multi-host tests check the interface
        String hosts = world.jobTable().map(t -> String.join(",", t.ranks().stream().map(q -> q.host()).toList())).orElse("-");
        System.out.print("rank " + r + " of " + n + ": OK (backend " + world.backend() + ", source " + source + ")\n"
                + "rank " + r + " table: " + hosts + "\n");
        System.out.flush();
        Distributed.reset();
        System.exit(0);
    }
}
