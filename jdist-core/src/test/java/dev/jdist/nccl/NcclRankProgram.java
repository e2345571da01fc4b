package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.DistributedException;
import dev.jdist.Group;

import java.util.Arrays;

/**
 * A whole nccl rank as its own process, configured only by the real environment (the library-path
 * variables included): reports availability, forms the group with Distributed.init(true, "nccl") and
 * runs every op on device memory. Prints {@code AVAILABLE <bool> <reason>}, then {@code OK ...} lines,
 * or {@code ERROR <class>: <message>} and exits 3.
 */
public final class NcclRankProgram {
    public static void main(String[] args) {
        System.out.println("AVAILABLE " + Distributed.isAvailable("nccl") + " "
                + new NcclBackend().unavailableReason().orElse("-"));
        try (Group g = Distributed.init(true, "nccl")) {
            NcclGroup ng = NcclGroup.of(g);
            System.out.println("OK group rank=" + g.rank() + " size=" + g.size() + " device=" + ng.device());
            Array x = Array.fromDoubles(DType.FLOAT32, new double[] {1, 2, 3, 4}, 4);
            try (DeviceArray d = ng.toDevice(x);
                 DeviceArray sum = ng.allSum(d);
                 DeviceArray max = ng.allMax(d);
                 DeviceArray min = ng.allMin(d);
                 DeviceArray all = ng.allGather(d);
                 DeviceArray part = ng.sumScatter(d)) {
                System.out.println("OK all_sum " + Arrays.toString(sum.toHost().toFloatArray()));
                System.out.println("OK all_max " + Arrays.toString(max.toHost().toFloatArray()));
                System.out.println("OK all_min " + Arrays.toString(min.toHost().toFloatArray()));
                System.out.println("OK all_gather " + Arrays.toString(all.toHost().toFloatArray()));
                System.out.println("OK sum_scatter " + Arrays.toString(part.toHost().toFloatArray()));
            }
        } catch (DistributedException e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            System.exit(3);
        }
    }
}
