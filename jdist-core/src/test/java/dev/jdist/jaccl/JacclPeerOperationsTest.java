package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.CollectiveChecks;
import dev.jdist.DType;
import dev.jdist.Group;
import dev.jdist.PeerOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The operations MLX lacks on JACCL (docs/reference/collectives.md §13.9), rank per thread over the in-memory fabric:
 * every value {@link CollectiveChecks} knows (all 14 dtypes, sizes 0, 1, odd and several frames, roots other than 0,
 * batches whose order would deadlock blocking calls) on the mesh and on the ring (one and two wires), n = 2…8; the ring's
 * refusal of non-neighbours; and the refusal of every one of them while MLX peers may be in the group.
 */
@Timeout(600)
class JacclPeerOperationsTest {

    static GroupImpl[] groups(int n, JacclConfig.Topology topology, int wires) {
        return groups(topology == JacclConfig.Topology.MESH ? MemFabric.mesh(n, JacclConfig.QpMode.UC)
                : MemFabric.ring(n, wires, JacclConfig.QpMode.UC), n, topology, wires, Duration.ofSeconds(30));
    }

    static GroupImpl[] groups(MemFabric fabric, int n, JacclConfig.Topology topology, int wires, Duration timeout) {
        GroupImpl[] groups = new GroupImpl[n];
        for (int r = 0; r < n; r++) {
            groups[r] = JacclGroup.over(r, n, topology, wires, timeout,
                    SideChannel.custom(r, n, (rank, size) -> (src, b) -> new byte[size * b]), fabric.transport(r));
        }
        return groups;
    }

    /**
     * Runs {@code body} on every rank at once; returns each rank's result. A rank that fails closes every group, so the
     * others fail at once instead of each waiting out its deadline, and the first failure is thrown.
     */
    static <T> List<T> onEveryRank(GroupImpl[] groups, Function<GroupImpl, T> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(groups.length);
        try {
            ExecutorCompletionService<T> done = new ExecutorCompletionService<>(pool);
            List<Future<T>> fs = new ArrayList<>();
            for (GroupImpl g : groups) fs.add(done.submit(() -> body.apply(g)));
            for (int i = 0; i < groups.length; i++) {
                Future<T> f = done.poll(500, TimeUnit.SECONDS);
                if (f == null) throw new AssertionError("a rank did not finish within 500 s");
                try {
                    f.get();
                } catch (ExecutionException e) {
                    for (GroupImpl g : groups) g.close();
                    throw new AssertionError("rank " + fs.indexOf(f) + " failed: " + e.getCause(), e.getCause());
                }
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : fs) out.add(f.get());
            return out;
        } finally {
            pool.shutdownNow();
            for (GroupImpl g : groups) g.close();
        }
    }

    @ParameterizedTest(name = "{0} ranks, {1}, {2} wire(s), {3} bytes large")
    @CsvSource({
            "2,MESH,0,300000", "3,MESH,0,300000", "4,MESH,0,300000", "5,MESH,0,1200000",
            "2,RING,1,300000", "3,RING,1,300000", "5,RING,1,1200000", "3,RING,2,300000", "4,RING,2,1200000"})
    void everyNewOperationGivesTheDocumentedBytesOnEveryRank(int n, JacclConfig.Topology topology, int wires, long large) throws Exception {
        newOperationsOnEveryRank(n, topology, wires, large);
    }

    /** The same checks on 4 and 6..8 ranks: the code paths of the cases above at larger n, 25 s more, so in the long tier. */
    @LongTest
    @ParameterizedTest(name = "{0} ranks, {1}, {2} wire(s), {3} bytes large")
    @CsvSource({"6,MESH,0,300000", "7,MESH,0,300000", "8,MESH,0,300000",
            "4,RING,1,300000", "6,RING,1,300000", "7,RING,1,300000", "8,RING,1,300000"})
    void everyNewOperationGivesTheDocumentedBytesOnEveryRankOfLargerGroups(int n, JacclConfig.Topology topology, int wires, long large)
            throws Exception {
        newOperationsOnEveryRank(n, topology, wires, large);
    }

    private void newOperationsOnEveryRank(int n, JacclConfig.Topology topology, int wires, long large) throws Exception {
        CollectiveChecks.Options o = new CollectiveChecks.Options(List.of(DType.values()), List.of(DType.FLOAT32, DType.INT64),
                large, true);
        CollectiveChecks.Options checks = topology == JacclConfig.Topology.MESH ? o : o.neighboursOnly();
        List<List<String>> out = onEveryRank(groups(n, topology, wires), impl -> CollectiveChecks.run(CollectiveChecks.jdistGroup(impl), checks));
        for (int r = 0; r < n; r++) assertThat(out.get(r)).as("rank %d", r).isEmpty();
    }

    /**
     * A rank that vanishes during the new operations fails every survivor as JACCL's own operations do (the frame
     * engine's deadline or completion error, naming the rank), relaying neighbours and ranks farther away alike, and the
     * broken group then fails at once.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @CsvSource({"MESH,RC", "RING,UC"})
    void aLostRankFailsEverySurvivorAndBreaksTheGroup(JacclConfig.Topology topology, JacclConfig.QpMode mode) throws Exception {
        int n = 5, victim = 2;
        MemFabric fabric = topology == JacclConfig.Topology.MESH ? MemFabric.mesh(n, mode) : MemFabric.ring(n, 1, mode);
        GroupImpl[] groups = groups(fabric, n, topology, topology == JacclConfig.Topology.MESH ? 0 : 1, Duration.ofSeconds(3));
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<String>> fs = new ArrayList<>();
            for (GroupImpl impl : groups) {
                fs.add(pool.submit(() -> {
                    Group g = CollectiveChecks.jdistGroup(impl);
                    Array x = Array.zeros(DType.FLOAT32, 200_000);
                    for (int i = 0; i < 1000; i++) {
                        if (g.rank() == victim && i == 3) {
                            fabric.kill(victim);
                            return "victim";
                        }
                        try {
                            g.broadcastInto(x, i % n);
                            g.allToAll(x);
                            g.gather(x, 4);
                        } catch (dev.jdist.DistributedException e) {
                            long t0 = System.nanoTime();
                            String again;
                            try {
                                g.scatter(x, 0);
                                again = "the broken group ran an operation";
                            } catch (dev.jdist.DistributedException later) {
                                again = (System.nanoTime() - t0) < 1_000_000_000L ? "then at once: " + later.getClass().getSimpleName()
                                        : "then slowly";
                            }
                            return e.getClass().getSimpleName() + ": " + e.getMessage() + " | " + again;
                        }
                    }
                    return "never failed";
                }));
            }
            for (int r = 0; r < n; r++) {
                String got = fs.get(r).get(100, TimeUnit.SECONDS);
                if (r == victim) {
                    assertThat(got).isEqualTo("victim");
                    continue;
                }
                assertThat(got).as("rank %d", r).matches("(PeerLostException|DeadlineExceededException): .*")
                        .contains("JACCL rank " + r).contains("| then at once: ");
            }
        } finally {
            pool.shutdownNow();
            for (GroupImpl g : groups) g.close();
        }
    }

    @Test
    void singleSendRecvAndBatchesShareTheOrderBetweenTwoRanks() throws Exception {
        // rank 0 sends three messages: a single send, then a batch of two; rank 1 takes the first two in a batch and the
        // third with a single recv (the k-th sent is the k-th received, §13.6)
        for (JacclConfig.Topology t : JacclConfig.Topology.values()) {
            List<String> out = onEveryRank(groups(3, t, 2), impl -> {
                Group g = CollectiveChecks.jdistGroup(impl);
                if (g.rank() == 0) {
                    g.send(Array.of(1, 2, 3), 1);
                    g.batchSendRecv(List.of(PeerOp.send(Array.of(4), 1), PeerOp.send(Array.zeros(DType.INT32, 70_000), 1)));
                    return "sent";
                }
                if (g.rank() == 1) {
                    List<Array> got = g.batchSendRecv(List.of(PeerOp.recv(new int[] {3}, DType.INT32, 0), PeerOp.recv(new int[] {1}, DType.INT32, 0)));
                    Array last = g.recv(new int[] {70_000}, DType.INT32, 0);
                    return got.get(0).getLong(2) + " " + got.get(1).getLong(0) + " " + last.size();
                }
                return "idle";
            });
            assertThat(out).as("%s", t).containsExactly("sent", "3 4 70000", "idle");
        }
    }

    @Test
    void theRingRefusesNonNeighboursBeforeAnythingMovesAndNamesTheMesh() throws Exception {
        List<String> out = onEveryRank(groups(5, JacclConfig.Topology.RING, 1), impl -> {
            Group g = CollectiveChecks.jdistGroup(impl);
            int r = g.rank();
            StringBuilder sb = new StringBuilder();
            try {
                g.batchSendRecv(List.of(PeerOp.send(Array.of(r), (r + 1) % 5), PeerOp.send(Array.of(r), (r + 2) % 5)));
                sb.append("batch ran");
            } catch (UnsupportedCollectiveException e) {
                sb.append(e.getMessage());
            }
            try {
                g.send(Array.of(r), (r + 2) % 5);
                sb.append(" | send ran");
            } catch (UnsupportedCollectiveException e) {
                sb.append(" | ").append(e.getMessage());
            }
            g.barrier();   // the group is still usable
            return sb.toString();
        });
        assertThat(out.get(0)).contains("rank 0 cannot send to rank 2").contains("ranks 4 (left) and 1 (right) of 5")
                .contains("JACCL mesh").contains("MLX_JACCL_RING unset")
                .contains("| JACCL ring: rank 0 can only send to its neighbours");
    }

    @Test
    void withMlxPeersPossibleTheNewOperationsAreRefusedAndSendRecvKeepMlxRules() throws Exception {
        for (JacclConfig.Topology t : JacclConfig.Topology.values()) {
            List<String> out = onEveryRank(groups(4, t, 1), impl -> {
                Group g = CollectiveChecks.groupWithMlxPeersPossible(impl);
                int r = g.rank();
                StringBuilder sb = new StringBuilder();
                for (Runnable call : List.<Runnable>of(() -> g.broadcast(Array.of(1f), 0), () -> g.allToAll(Array.zeros(DType.FLOAT32, 4)),
                        () -> g.gather(Array.of(1f), 0), () -> g.scatter(Array.zeros(DType.FLOAT32, 4), 0),
                        () -> g.batchSendRecv(List.of(PeerOp.send(Array.of(1f), (r + 1) % 4))))) {
                    try {
                        call.run();
                        sb.append("ran ");
                    } catch (UnsupportedCollectiveException e) {
                        sb.append(e.getMessage().contains("not supported with MLX peers in the group") ? "refused " : e.getMessage());
                    }
                }
                try {
                    if (r < 2) g.send(Array.of(r), r + 2);
                    else g.recv(new int[] {1}, DType.INT32, r - 2);
                    sb.append("far p2p ran");
                } catch (IllegalArgumentException e) {
                    sb.append(e.getMessage().contains("not supported with MLX peers") ? "far p2p refused" : e.getMessage());
                }
                // MLX's own operations still run
                return sb.append(" ").append(g.allSum(Array.of(1)).getLong(0)).toString();
            });
            String farP2p = t == JacclConfig.Topology.MESH ? "far p2p ran" : "far p2p refused";
            for (String s : out) assertThat(s).as("%s", t).isEqualTo("refused refused refused refused refused " + farP2p + " 4");
        }
    }
}
