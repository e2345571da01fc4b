package dev.jdist.ring;

import dev.jdist.CollectiveChecks;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.TestGroups;

/**
 * One rank of a multi-process check of the operations MLX lacks on the ring (docs/reference/collectives.md §13), started by
 * {@link PeerOperationsMultiProcessIT} with MLX_RANK, MLX_HOSTFILE and a JDIST_JOB_TOKEN: every value
 * {@link CollectiveChecks} knows (broadcast, barrier, all_to_all(v), gather, scatter, any-peer send/recv, batches), on
 * the world and on a split. Prints "rank r of n: OK ..." and exits 0, or prints what is wrong and exits 1.
 */
public final class PeerOperationsProgram {
    private PeerOperationsProgram() {}

    public static void main(String[] args) {
        Group world = Distributed.init(true, "ring");
        RingGroup g = (RingGroup) TestGroups.impl(world);
        int r = world.rank(), n = world.size();
        StringBuilder bad = new StringBuilder();
        try {
            if (g.peerMesh().isEmpty()) bad.append("a job-token group formed no mesh\n");
            CollectiveChecks.runOnWorldAndSplit(world, CollectiveChecks.Options.full(1 << 20)).forEach(w -> bad.append(w).append('\n'));
        } catch (RuntimeException e) {
            e.printStackTrace();
            bad.append("exception: ").append(e).append('\n');
        }
        if (!bad.isEmpty()) {
            System.out.println("rank " + r + ": FAILED");
            bad.toString().lines().limit(40).forEach(l -> System.out.println("  " + l));
            System.out.flush();
            System.exit(1);
        }
        System.out.println("rank " + r + " of " + n + ": OK (" + g.transportName() + ", "
                + g.peerMesh().map(m -> m.openConnections() + " mesh connection(s), " + m.sharedMemoryConnections()
                + " over shared memory").orElse("no mesh") + ")");
        System.out.flush();
        Distributed.reset();
        System.exit(0);
    }
}
