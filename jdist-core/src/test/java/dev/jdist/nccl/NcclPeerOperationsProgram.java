package dev.jdist.nccl;

import dev.jdist.CollectiveChecks;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

import java.util.List;

/**
 * One rank of NcclProcessesIT's multi-process check of the operations MLX lacks over NCCL (docs/reference/collectives.md
 * §13): a process of its own against the stub libraries in their file mode (JDIST_STUB_NCCL_WORLD_DIR), so that
 * ncclBroadcast and the grouped ncclSend/ncclRecv of any-peer send/recv, batches, all_to_all(v), gather and scatter
 * cross process boundaries. Runs every value {@link CollectiveChecks} knows on the world and on a split (ncclCommSplit).
 * Prints "rank r of n: OK ..." and exits 0, or prints what is wrong and exits 1.
 */
public final class NcclPeerOperationsProgram {
    private NcclPeerOperationsProgram() {}

    public static void main(String[] args) {
        int exit = 0;
        StringBuilder bad = new StringBuilder();
        int r = -1, n = -1;
        try (Group world = Distributed.init(true, "nccl")) {
            r = world.rank();
            n = world.size();
            // bytes move as ncclUint8 whatever the dtype: every dtype, float32 also large (several grouped messages)
            CollectiveChecks.runOnWorldAndSplit(world, new CollectiveChecks.Options(List.of(DType.values()),
                    List.of(DType.FLOAT32), 200_000, true)).forEach(w -> bad.append(w).append('\n'));
        } catch (RuntimeException e) {
            e.printStackTrace();
            bad.append("exception: ").append(e).append('\n');
        }
        if (!bad.isEmpty()) {
            System.out.println("rank " + r + ": FAILED");
            bad.toString().lines().limit(40).forEach(l -> System.out.println("  " + l));
            exit = 1;
        } else {
            System.out.println("rank " + r + " of " + n + ": OK (nccl, stub libraries in file mode)");
        }
        System.out.flush();
        System.exit(exit);
    }
}
