package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.CollectiveMismatchException;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.TestGroups;
import dev.jdist.WatchedGroups;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * JACCL groups of jdist ranks (threads of this JVM over the in-memory fabric, each with its own liveness watch on
 * loopback): a lost peer ends UC waits through the watch instead of JDIST_TIMEOUT (unset here: 30 minutes), calls that
 * differ fail every rank with {@code JDIST_DEBUG=detail}, and close() returns within seconds after a failure and while
 * another thread's operation waits.
 */
@Timeout(180)
class JacclLivenessTest {
    private final List<Group> groups = new ArrayList<>();
    private MemFabric fabric;

    /** A mesh of {@code n} jdist ranks; the JACCL groups start with a 120 s deadline, which the watch replaces. */
    List<Group> mesh(int n, Map<String, String> extraEnv) throws Exception {
        fabric = MemFabric.mesh(n, JacclConfig.QpMode.UC);
        Map<String, String> env = new java.util.HashMap<>(Map.of("JDIST_HEARTBEAT", "2s", "JDIST_JOB_TOKEN", "jaccl-liveness-test"));
        env.putAll(extraEnv);
        groups.addAll(WatchedGroups.form(n, q -> JacclGroup.over(q, n, JacclConfig.Topology.MESH, 0, Duration.ofSeconds(120),
                new NoSideChannel(q, n), fabric.transport(q)), env));
        return groups;
    }

    @AfterEach
    void closeAll() {
        for (Group g : groups) g.close();
    }

    /** The side channel is not used after set-up; these groups were set up without one. */
    record NoSideChannel(int rank, int size) implements SideChannel {
        @Override public byte[] allGather(byte[] src) { throw new UnsupportedOperationException("no side channel in this test"); }
        @Override public void close() {}
    }

    /** Runs {@code body} on the ranks where {@code on} is true, each on its own thread; returns result or throwable per rank. */
    static List<Object> onRanks(List<Group> gs, Function<Integer, Boolean> on, Function<Group, Object> body) throws Exception {
        List<CompletableFuture<Object>> fs = new ArrayList<>();
        for (Group g : gs) {
            fs.add(on.apply(g.rank()) ? CompletableFuture.supplyAsync(() -> body.apply(g),
                    r -> Thread.ofPlatform().daemon().name("rank-" + g.rank()).start(r)) : null);
        }
        List<Object> out = new ArrayList<>();
        for (var f : fs) {
            if (f == null) {
                out.add(null);
                continue;
            }
            try {
                out.add(f.get(120, TimeUnit.SECONDS));
            } catch (ExecutionException e) {
                out.add(e.getCause());
            }
        }
        return out;
    }

    @Test
    void aLostPeerEndsUcWaitsThroughTheWatchNotTheDeadline() throws Exception {
        List<Group> gs = mesh(4, Map.of());
        Array x = Array.full(DType.FLOAT32, 1, 1000);
        assertThat(TestGroups.impl(gs.getFirst()).rank()).isZero();
        onRanks(gs, q -> true, g -> g.allSum(x));   // all healthy first
        WatchedGroups.killWatch(gs.get(2));
        fabric.kill(2);
        List<Object> res = onRanks(gs, q -> q != 2, g -> g.allSum(x));
        for (int q : new int[] {0, 1, 3}) {
            assertThat(res.get(q)).as("rank %d", q).isInstanceOf(PeerUnresponsiveException.class);
            PeerUnresponsiveException e = (PeerUnresponsiveException) res.get(q);
            assertThat(e.peer()).hasValue(2);
            assertThat(e.host()).hasValueSatisfying(h -> assertThat(h).contains("127.0.0.1"));
            assertThat(e.rank()).hasValue(q);
            assertThat(e.group()).hasValue("world");
            assertThat(e.sequence()).hasValue(1);
            assertThat(e.operation()).hasValue("all_sum float32[1000]");
        }
        // teardown after a failure cannot hang
        for (int q : new int[] {0, 1, 3}) {
            long t0 = System.nanoTime();
            gs.get(q).close();
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("close of rank %d", q).isLessThan(Duration.ofSeconds(15));
        }
    }

    /** The chaos suite's JACCL trial (bench/chaos/run.sh --backends jaccl): a kill and a stop mid-loop, mesh and ring. */
    @Test
    void chaosTrialsEndEverySurvivorNamingTheVictimAndLeaveNothing() throws Exception {
        for (String fault : List.of("kill", "stop")) {
            for (int t = 1; t <= 2; t++) {   // odd: mesh, even: ring
                String[] row = JacclChaos.trial(fault, t, 1, 50, "2s", 60_000).split("\t");
                assertThat(row[6]).as("outcome of %s #%d: %s", fault, t, String.join(" ", row)).isEqualTo("ok");
                assertThat(row[7]).isEqualTo("0:PeerUnresponsiveException:peer=1,2:PeerUnresponsiveException:peer=1,3:PeerUnresponsiveException:peer=1");
                assertThat(row[8]).as("rank threads or groups left").isEqualTo("0");
            }
        }
    }

    @Test
    void closeEndsAnOperationWaitingOnAnotherThreadAndReturnsWithinSeconds() throws Exception {
        List<Group> gs = mesh(2, Map.of());
        CompletableFuture<Array> pending = gs.get(0).allSumAsync(Array.full(DType.FLOAT32, 1, 64));   // rank 1 never joins
        Thread.sleep(300);
        long t0 = System.nanoTime();
        gs.get(0).close();
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(15));
        assertThat(pending).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOf(DistributedException.class).withMessageContaining("closed");
    }

    @Test
    void withDetailAnOperationMismatchFailsEveryRankNamingBothCalls() throws Exception {
        List<Group> gs = mesh(4, Map.of("JDIST_DEBUG", "detail"));
        List<Object> res = onRanks(gs, q -> true, g -> g.rank() == 2 ? g.allSum(Array.zeros(DType.FLOAT32, 1024))
                : g.allGather(Array.zeros(DType.INT32, 12)));
        for (int q = 0; q < 4; q++) {
            assertThat(res.get(q)).as("rank %d", q).isInstanceOf(CollectiveMismatchException.class);
            assertThat(((Throwable) res.get(q)).getMessage())
                    .contains("rank 2 is in all_sum float32[1024] #0").contains("ranks 0, 1, 3 are in all_gather int32[12] #0");
        }
    }

    @Test
    void withDetailADtypeOrShapeMismatchIsFoundBeforeWrongNumbersAppear() throws Exception {
        List<Group> gs = mesh(3, Map.of("JDIST_DEBUG", "detail"));
        // same byte count on every rank: without the check this would silently add int32 bits to float32 values
        List<Object> res = onRanks(gs, q -> true, g -> g.allSum(Array.zeros(g.rank() == 1 ? DType.INT32 : DType.FLOAT32, 16)));
        for (Object r : res) {
            assertThat(r).isInstanceOf(CollectiveMismatchException.class);
            CollectiveMismatchException e = (CollectiveMismatchException) r;
            assertThat(e.getMessage()).contains("rank 1 is in all_sum int32[16] #0").contains("ranks 0, 2 are in all_sum float32[16] #0");
        }
        CollectiveMismatchException first = (CollectiveMismatchException) res.getFirst();
        assertThat(first.calls()).containsOnlyKeys(0, 1, 2);
    }

    @Test
    void withDetailAShapeMismatchOfEqualSizeIsFound() throws Exception {
        List<Group> gs = mesh(2, Map.of("JDIST_DEBUG", "detail"));
        List<Object> res = onRanks(gs, q -> true, g -> g.allSum(g.rank() == 0 ? Array.zeros(DType.FLOAT32, 2, 8) : Array.zeros(DType.FLOAT32, 16)));
        for (Object r : res) {
            assertThat(r).isInstanceOf(CollectiveMismatchException.class);
            assertThat(((Throwable) r).getMessage()).contains("float32[2,8]").contains("float32[16]");
        }
    }

    @Test
    void withDetailMatchingCallsRunAndGiveTheRightValues() throws Exception {
        List<Group> gs = mesh(3, Map.of("JDIST_DEBUG", "detail"));
        List<Object> res = onRanks(gs, q -> true, g -> {
            Array s = g.allSum(Array.full(DType.FLOAT32, g.rank() + 1, 5));
            if (g.rank() == 0) g.send(Array.full(DType.INT32, 7, 3), 1);
            if (g.rank() == 1) return s.getDouble(4) + g.recv(new int[] {3}, DType.INT32, 0).getDouble(2);
            return s.getDouble(4);
        });
        assertThat(res).containsExactly(6.0, 13.0, 6.0);
    }

    @Test
    void withDetailASendMetByAReceiveOfAnotherSizeFailsBoth() throws Exception {
        List<Group> gs = mesh(2, Map.of("JDIST_DEBUG", "detail"));
        List<Object> res = onRanks(gs, q -> true, g -> g.rank() == 0 ? g.send(Array.zeros(DType.FLOAT32, 8), 1)
                : g.recv(new int[] {4}, DType.FLOAT32, 0));
        for (Object r : res) {
            assertThat(r).isInstanceOf(CollectiveMismatchException.class);
            assertThat(((Throwable) r).getMessage()).contains("send float32[8] to rank 1").contains("recv float32[4] from rank 0");
        }
    }

    @Test
    void aPeerThatClosedItsGroupEndsAWaitForItsData() throws Exception {
        List<Group> gs = mesh(3, Map.of());
        gs.get(2).close();
        List<Object> res = onRanks(gs, q -> q != 2, g -> g.allSum(Array.full(DType.FLOAT32, 1, 64)));
        for (int q : new int[] {0, 1}) {
            assertThat(res.get(q)).as("rank %d", q).isInstanceOf(PeerLostException.class);
            assertThat(((Throwable) res.get(q)).getMessage()).contains("rank 2").contains("closed its group");
        }
    }
}
