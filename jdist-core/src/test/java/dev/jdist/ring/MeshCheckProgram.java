package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.TestGroups;
import dev.jdist.algo.AlgorithmPolicy;
import dev.jdist.algo.CollectiveKind;
import dev.jdist.algo.MeshChecks;

import java.util.List;
import java.util.Map;

/**
 * One rank of a multi-process check of the size-aware algorithms (docs/reference/collectives.md §10), started by
 * {@link MeshMultiProcessIT} with MLX_RANK and MLX_HOSTFILE. With {@code jdist} (the job has a JDIST_JOB_TOKEN): the
 * group must have formed its peer mesh; every op and dtype runs under several algorithm choices (the same sequence on
 * every rank) and each rank checks its bytes against §10.4's value and against every other rank's. With {@code mlx} (no
 * token): there must be no mesh, and the ring runs. With {@code hier} (a job token, and JDIST_HOST_ID faking several hosts):
 * as {@code jdist}, under the hierarchy chosen by default and forced, values checked against §10.11's. Prints "rank r of n: OK ..." and exits 0, or prints what is wrong
 * and exits 1.
 */
public final class MeshCheckProgram {
    private MeshCheckProgram() {}

    public static void main(String[] args) {
        boolean hier = args.length > 0 && args[0].equals("hier");
        boolean jdist = hier || args.length > 0 && args[0].equals("jdist");
        Group world = Distributed.init(true, "ring");
        RingGroup g = (RingGroup) TestGroups.impl(world);
        StringBuilder bad = new StringBuilder();
        String detail;
        try {
            if (!jdist) {
                if (g.peerMesh().isPresent()) bad.append("a group without a job token formed a mesh\n");
                Array sum = world.allSum(Array.of(1f, 2f, 3f));
                if (sum.getDouble(2) != 3.0 * world.size()) bad.append("all_sum gave ").append(sum.getDouble(2)).append('\n');
                detail = "no mesh, " + g.algorithmFor(CollectiveKind.ALL_REDUCE, 4);
            } else {
                if (g.peerMesh().isEmpty()) bad.append("a job-token group formed no mesh\n");
                if (world.jobTable().isEmpty()) bad.append("no job table\n");
                boolean allDtypes = world.size() <= 5;
                List<String> algos = hier ? List.of("auto", "hier-leader", "all_reduce=rd,all_gather=hier,sum_scatter=hier")
                        : List.of("auto", "rd", "rhd", "all_gather=bruck,sum_scatter=rh", "ring1");
                for (String algo : algos) {
                    g.useAlgorithmPolicy(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", algo)));
                    String got = MeshChecks.checkAll(g, 1000L * world.size() + algo.hashCode(), allDtypes);
                    if (algo.equals("auto")) got += MeshChecks.checkCrossovers(g, 7);
                    // the one-direction ring at several parts (sizes of MiBs: only on small groups, to bound the run)
                    if (algo.equals("ring1") && world.size() <= 3) got += MeshChecks.checkRingParts(g, 5);
                    if (!got.isEmpty()) bad.append("JDIST_ALGO=").append(algo).append(":\n").append(got);
                }
                detail = "mesh, " + g.peerMesh().map(m -> m.openConnections() + " connection(s)").orElse("none");
                if (hier) {
                    g.useAlgorithmPolicy(AlgorithmPolicy.defaults());
                    detail = "hosts " + g.hostLayout().orElseThrow() + ", " + g.algorithmFor(CollectiveKind.ALL_REDUCE, 4);
                }
            }
        } catch (RuntimeException e) {
            e.printStackTrace();
            bad.append("exception: ").append(e).append('\n');
            detail = "";
        }
        if (!bad.isEmpty()) {
            System.out.println("rank " + world.rank() + ": FAILED");
            bad.toString().lines().limit(40).forEach(l -> System.out.println("  " + l));
            System.out.flush();
            System.exit(1);
        }
        g.peerMesh().ifPresent(m -> {
            StringBuilder pairs = new StringBuilder();
            for (int q = 0; q < m.size(); q++) {
                if (m.connection(q) != null) pairs.append(' ').append(q).append(m.connection(q).sharedMemory() ? "=shm" : "=tcp");
            }
            System.out.println("rank " + world.rank() + " mesh pairs:" + pairs);
        });
        System.out.println("rank " + world.rank() + " of " + world.size() + ": OK (" + detail + ")");
        System.out.flush();
        Distributed.reset();
        System.exit(0);
    }

}
