package dev.jdist.liveness;

import dev.jdist.CollectiveMismatchException;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.OperationFingerprint;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.WatchedGroups;
import dev.jdist.spi.JobTable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The watch of several ranks in one JVM, over loopback UDP: no failure while all beat, a silent rank declared on every
 * other within the bound, a goodbye that is no failure, a broken group's reason reaching the others, calls that differ,
 * the report of a long wait, and settings that disagree.
 */
@Timeout(60)
class LivenessMonitorTest {
    private final List<LivenessMonitor> monitors = new ArrayList<>();

    static final class Activity implements LocalActivity {
        volatile OperationFingerprint running;
        volatile OperationFingerprint last;
        volatile long changed = System.nanoTime();

        @Override public OperationFingerprint running() { return running; }
        @Override public OperationFingerprint lastCompleted() { return last; }
        @Override public long changedAtNanos() { return changed; }
        volatile List<OperationFingerprint> recent = List.of();
        @Override public List<OperationFingerprint> recentCollectives() { return recent; }
    }

    /** n watches started together; {@code env} for all. */
    List<LivenessMonitor> start(int n, Map<String, String> env, List<Activity> activities, Duration waitReport) {
        JobTable table = WatchedGroups.loopbackTable(n);
        List<LivenessMonitor> ms = new ArrayList<>();
        byte[] all = new byte[n * LivenessMonitor.RECORD_BYTES];
        for (int q = 0; q < n; q++) {
            Activity a = new Activity();
            activities.add(a);
            LivenessMonitor m = LivenessMonitor.open(q, table, LivenessSettings.fromEnvironment(env), a, "t", waitReport);
            System.arraycopy(m.record(), 0, all, q * LivenessMonitor.RECORD_BYTES, LivenessMonitor.RECORD_BYTES);
            ms.add(m);
            monitors.add(m);
        }
        for (LivenessMonitor m : ms) m.start(all);
        return ms;
    }

    interface Body {
        void run() throws Exception;
    }

    /** What {@code body} printed on stderr (the watch's reports go there). */
    static String stderrOf(Body body) throws Exception {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true));
        try {
            body.run();
        } finally {
            System.setErr(err);
        }
        return captured.toString();
    }

    @AfterEach
    void closeAll() {
        for (LivenessMonitor m : monitors) m.close();
    }

    static DistributedException awaitFailure(LivenessMonitor m, long maxMillis) throws InterruptedException {
        long end = System.nanoTime() + maxMillis * 1_000_000;
        while (System.nanoTime() < end) {
            DistributedException f = m.failure();
            if (f != null) return f;
            Thread.sleep(20);
        }
        return null;
    }

    @Test
    void ranksThatBeatAreNeverDeclaredLost() throws Exception {
        List<LivenessMonitor> ms = start(3, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        Thread.sleep(3000);
        for (LivenessMonitor m : ms) assertThat(m.failure()).isNull();
        assertThat(ms.get(0).progressDeadline()).isEqualTo(Duration.ofMinutes(30));
    }

    @Test
    void aSilentRankIsDeclaredOnEveryOtherWithinTheBoundAndListenersRun() throws Exception {
        List<LivenessMonitor> ms = start(4, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        List<DistributedException> heard = new CopyOnWriteArrayList<>();
        ms.get(0).onFailure(heard::add);
        long t0 = System.nanoTime();
        ms.get(2).stopWithoutGoodbye();
        for (int q : new int[] {0, 1, 3}) {
            DistributedException f = awaitFailure(ms.get(q), 5000);
            assertThat(f).as("rank %d", q).isInstanceOf(PeerUnresponsiveException.class);
            PeerUnresponsiveException p = (PeerUnresponsiveException) f;
            assertThat(p.peer()).hasValue(2);
            assertThat(p.host()).hasValueSatisfying(h -> assertThat(h).contains("testhost").contains("127.0.0.1"));
            // the test's ranks are threads of this JVM: /proc says the "peer" is running
            assertThat(p.state()).isEqualTo(PeerUnresponsiveException.State.RUNNING);
            assertThat(p.getMessage()).contains("rank 2").contains("no heartbeat for").contains("JDIST_HEARTBEAT=1 s");
        }
        long ms0 = (System.nanoTime() - t0) / 1_000_000;
        assertThat(ms0).as("declared within a few bounds (a loaded machine may delay it)").isLessThan(5000);
        // the watch's thread runs the listeners just after failure() turns non-null: give it a moment (bounded)
        for (long end = System.nanoTime() + 2_000_000_000L; heard.isEmpty() && System.nanoTime() < end; ) Thread.sleep(10);
        assertThat(heard).hasSize(1);
        ms.get(0).onFailure(heard::add);   // registered after the failure: runs at once
        assertThat(heard).hasSize(2);
    }

    @Test
    void aRankThatSaysGoodbyeIsNoFailure() throws Exception {
        List<LivenessMonitor> ms = start(3, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        ms.get(1).close();
        Thread.sleep(2500);
        assertThat(ms.get(0).failure()).isNull();
        assertThat(ms.get(0).hasLeft(1)).isTrue();
        assertThat(ms.get(2).hasLeft(1)).isTrue();
        assertThat(ms.get(2).hasLeft(0)).isFalse();
    }

    @Test
    void aRanksOwnFailureReachesTheOthersAndNamesTheLostPeer() throws Exception {
        List<LivenessMonitor> ms = start(3, Map.of("JDIST_HEARTBEAT", "2s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        ms.get(2).stopWithoutGoodbye();
        DistributedException local = new PeerLostException("rank 1: all_sum lost the connection to rank 2", null, 1, 2, "all_sum");
        DistributedException explained = ms.get(1).explain(local);
        assertThat(explained).isInstanceOf(PeerLostException.class);
        assertThat(((PeerLostException) explained).peer()).hasValue(2);
        assertThat(explained.getMessage()).contains("rank 2").contains("lost its connection to it");
        // rank 0 never saw a failure itself, but ends its groups at once on rank 1's word, naming rank 2
        DistributedException f = awaitFailure(ms.get(0), 1500);
        assertThat(f).isInstanceOf(PeerLostException.class);
        assertThat(((PeerLostException) f).peer()).hasValue(2);
        assertThat(f.getMessage()).contains("rank 1 lost its connection to it");
    }

    @Test
    void callsThatDifferAtOneCollectiveNumberFailEveryRank() throws Exception {
        List<Activity> acts = new ArrayList<>();
        List<LivenessMonitor> ms = start(3, Map.of("JDIST_HEARTBEAT", "1s"), acts, LivenessMonitor.WAIT_REPORT);
        acts.get(0).running = OperationFingerprint.of(5, 5, "all_gather", DType.INT32, new int[] {12}, -1);
        acts.get(1).running = OperationFingerprint.of(5, 5, "all_gather", DType.INT32, new int[] {12}, -1);
        acts.get(2).running = OperationFingerprint.of(5, 5, "all_sum", DType.FLOAT32, new int[] {1024}, -1);
        for (LivenessMonitor m : ms) {
            DistributedException f = awaitFailure(m, 4000);
            assertThat(f).isInstanceOf(CollectiveMismatchException.class);
            assertThat(f.getMessage()).contains("rank 2 is in all_sum float32[1024] #5").contains("ranks 0, 1 are in all_gather int32[12] #5");
        }
    }

    @Test
    void aLongWaitIsReportedOnceNamingTheRanksNotInIt() throws Exception {
        String out = stderrOf(() -> {
            List<Activity> acts = new ArrayList<>();
            start(2, Map.of("JDIST_HEARTBEAT", "1s"), acts, Duration.ofMillis(1500));
            acts.get(1).last = OperationFingerprint.of(3, 3, "all_max", DType.INT8, new int[] {2}, -1);
            acts.get(1).changed = System.nanoTime();
            acts.get(0).running = OperationFingerprint.of(4, 4, "all_sum", DType.FLOAT32, new int[] {8}, -1);
            acts.get(0).changed = System.nanoTime();
            Thread.sleep(4000);
        });
        assertThat(out).containsOnlyOnce("jdist rank 0: all_sum float32[8] #4 has waited");
        assertThat(out).contains("rank 1 testhost").contains("idle since all_max int8[2] #3");
    }

    /** Each of the first {@code ranks} watches fails with a mismatch naming both calls and the group made by split. */
    private static void assertMismatchOnEveryRank(List<LivenessMonitor> ms, int ranks, String group, String jobRanks,
                                                  String oneCall, String otherCall) throws InterruptedException {
        for (int q = 0; q < ranks; q++) {
            DistributedException f = awaitFailure(ms.get(q), 4000);
            assertThat(f).as("rank %d", q).isInstanceOf(CollectiveMismatchException.class);
            assertThat(f.getMessage()).contains(oneCall).contains(otherCall)
                    .contains("in group " + group + " of job ranks " + jobRanks);
        }
    }

    @Test
    void callsThatDifferInAGroupMadeBySplitFailEveryRankOfTheJob() throws Exception {
        List<LivenessMonitor> ms = start(4, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        String label = "world/split@1(color=0)";
        Activity a0 = new Activity();
        Activity a2 = new Activity();
        ms.get(0).watchSplit(label, new int[] {0, 2}, a0);
        ms.get(2).watchSplit(label, new int[] {0, 2}, a2);
        a0.running = OperationFingerprint.of(1, 1, "all_gather", DType.INT32, new int[] {12}, -1);
        a2.running = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {1024}, -1);
        assertMismatchOnEveryRank(ms, 4, "world/split@1(color=0)", "0, 2", "rank 2 is in all_sum float32[1024] #1",
                "rank 0 is in all_gather int32[12] #1");
    }

    @Test
    void callsThatDifferInAGroupMadeBySplitAreFoundAfterTheRanksHaveMovedOn() throws Exception {
        // byte counts that let both calls complete: the ranks are past #4 when the watch compares, and only the group's
        // recent collectives in the heartbeats show it
        List<LivenessMonitor> ms = start(3, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        String label = "world/split@1(color=0)";
        Activity a0 = new Activity();
        Activity a1 = new Activity();
        ms.get(0).watchSplit(label, new int[] {0, 1}, a0);
        ms.get(1).watchSplit(label, new int[] {0, 1}, a1);
        OperationFingerprint same5 = OperationFingerprint.of(5, 5, "all_max", DType.INT8, new int[] {2}, -1);
        OperationFingerprint same6 = OperationFingerprint.of(6, 6, "all_max", DType.INT8, new int[] {2}, -1);
        a0.recent = List.of(OperationFingerprint.of(4, 4, "all_sum", DType.FLOAT32, new int[] {8}, -1), same5, same6);
        a1.recent = List.of(OperationFingerprint.of(4, 4, "all_sum", DType.INT32, new int[] {8}, -1), same5, same6);
        a0.last = same6;
        a1.last = same6;
        assertMismatchOnEveryRank(ms, 3, "world/split@1(color=0)", "0, 1", "all_sum float32[8] #4", "all_sum int32[8] #4");
    }

    @Test
    void aMismatchInOneOfTwoGroupsMadeBySplitIsFoundWhileTheOtherWaits() throws Exception {
        // ranks 0 and 1 are in two groups made by split; both wait in the first (its operation is the older wait, so it
        // comes first in their heartbeats), and their calls differ in the second: both groups must be compared
        List<LivenessMonitor> ms = start(2, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        String waiting = "world/split@1(color=0)";
        String other = "world/split@2(color=0)";
        Activity[] w = {new Activity(), new Activity()};
        Activity[] o = {new Activity(), new Activity()};
        long started = System.nanoTime() - 5_000_000_000L;
        for (int q = 0; q < 2; q++) {
            ms.get(q).watchSplit(waiting, new int[] {0, 1}, w[q]);
            ms.get(q).watchSplit(other, new int[] {0, 1}, o[q]);
            w[q].running = OperationFingerprint.of(2, 2, "all_gather", DType.INT8, new int[] {3}, -1);
            w[q].changed = started;
            o[q].changed = System.nanoTime();
        }
        o[0].running = OperationFingerprint.of(7, 7, "all_sum", DType.FLOAT32, new int[] {8}, -1);
        o[1].running = OperationFingerprint.of(7, 7, "all_min", DType.FLOAT32, new int[] {8}, -1);
        assertMismatchOnEveryRank(ms, 2, "world/split@2(color=0)", "0, 1", "all_sum float32[8] #7", "all_min float32[8] #7");
    }

    @Test
    void aMismatchInTheSecondOfTwoGroupsMadeBySplitIsFoundAfterTheRanksHaveMovedOn() throws Exception {
        // the second group's recent collectives fit a heartbeat only on its turn (the first group's eight take the room
        // in the other beats): receivers keep each group's last list, so the mismatch at #4 is still found
        List<Activity> world = new ArrayList<>();
        List<LivenessMonitor> ms = start(2, Map.of("JDIST_HEARTBEAT", "1s"), world, LivenessMonitor.WAIT_REPORT);
        Activity[] w = {new Activity(), new Activity()};
        Activity[] o = {new Activity(), new Activity()};
        List<OperationFingerprint> worldRecent = new ArrayList<>();
        for (int i = 1; i <= 8; i++) worldRecent.add(OperationFingerprint.of(i, i, "all_sum", DType.FLOAT64, new int[] {1}, -1));
        for (Activity a : world) {
            a.last = worldRecent.get(7);
            a.recent = worldRecent;
        }
        OperationFingerprint same5 = OperationFingerprint.of(5, 5, "all_max", DType.INT8, new int[] {2}, -1);
        List<OperationFingerprint> busy = new ArrayList<>();
        for (int i = 1; i <= 8; i++) busy.add(OperationFingerprint.of(i, i, "all_gather", DType.INT8, new int[] {3}, -1));
        for (int q = 0; q < 2; q++) {
            ms.get(q).watchSplit("world/split@1(color=0)", new int[] {0, 1}, w[q]);
            ms.get(q).watchSplit("world/split@2(color=0)", new int[] {0, 1}, o[q]);
            w[q].running = OperationFingerprint.of(9, 9, "all_gather", DType.INT8, new int[] {3}, -1);
            w[q].last = busy.get(7);
            w[q].recent = busy;
            w[q].changed = System.nanoTime() - 5_000_000_000L;
            o[q].last = same5;
        }
        o[0].recent = List.of(OperationFingerprint.of(4, 4, "all_sum", DType.FLOAT32, new int[] {8}, -1), same5);
        o[1].recent = List.of(OperationFingerprint.of(4, 4, "all_sum", DType.INT32, new int[] {8}, -1), same5);
        assertMismatchOnEveryRank(ms, 2, "world/split@2(color=0)", "0, 1", "all_sum float32[8] #4", "all_sum int32[8] #4");
    }

    @Test
    void groupsMadeBySplitAreComparedOnlyWithinThemselves() throws Exception {
        List<LivenessMonitor> ms = start(4, Map.of("JDIST_HEARTBEAT", "1s"), new ArrayList<>(), LivenessMonitor.WAIT_REPORT);
        for (int q = 0; q < 4; q++) {
            Activity a = new Activity();
            int colour = q % 2;
            ms.get(q).watchSplit("world/split@1(color=" + colour + ")", colour == 0 ? new int[] {0, 2} : new int[] {1, 3}, a);
            // the same collective number, different calls in the two groups: no mismatch
            a.running = colour == 0 ? OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {8}, -1)
                    : OperationFingerprint.of(1, 1, "all_gather", DType.INT8, new int[] {3}, -1);
        }
        Thread.sleep(3000);
        for (LivenessMonitor m : ms) assertThat(m.failure()).isNull();
    }

    @Test
    void aLongWaitInAGroupMadeBySplitIsReportedWithWhatItsMembersDo() throws Exception {
        String out = stderrOf(() -> {
            List<Activity> world = new ArrayList<>();
            List<LivenessMonitor> ms = start(4, Map.of("JDIST_HEARTBEAT", "1s"), world, Duration.ofMillis(1500));
            String label = "world/split@1(color=0)";
            int[] members = {0, 1, 3};
            Activity a0 = new Activity();
            Activity a3 = new Activity();
            ms.get(0).watchSplit(label, members, a0);
            ms.get(3).watchSplit(label, members, a3);
            // rank 1 has not reached the group's operations: it is in a world collective
            world.get(1).running = OperationFingerprint.of(9, 9, "all_gather", DType.INT32, new int[] {12}, -1);
            world.get(1).changed = System.nanoTime();
            a3.last = OperationFingerprint.of(3, 3, "all_max", DType.INT8, new int[] {2}, -1);
            a3.changed = System.nanoTime();
            a0.running = OperationFingerprint.of(4, 4, "all_sum", DType.FLOAT32, new int[] {8}, -1);
            a0.changed = System.nanoTime();
            Thread.sleep(4000);
            for (LivenessMonitor m : ms) assertThat(m.failure()).isNull();
        });
        assertThat(out).containsOnlyOnce("jdist rank 0: all_sum float32[8] #4 of group world/split@1(color=0) has waited");
        assertThat(out).contains("2 ranks not in it yet")
                .contains("rank 1 testhost").contains("in no operation of this group: in all_gather int32[12] #9 of the world group")
                .contains("rank 3 testhost").contains("idle since all_max int8[2] #3");
    }

    @Test
    void ranksThatDisagreeOnTheHeartbeatFailAlike() {
        JobTable table = WatchedGroups.loopbackTable(2);
        LivenessMonitor a = LivenessMonitor.open(0, table, LivenessSettings.fromEnvironment(Map.of("JDIST_HEARTBEAT", "3s")), new Activity(), null);
        LivenessMonitor b = LivenessMonitor.open(1, table, LivenessSettings.fromEnvironment(Map.of()), new Activity(), null);
        monitors.add(a);
        monitors.add(b);
        byte[] all = new byte[2 * LivenessMonitor.RECORD_BYTES];
        System.arraycopy(a.record(), 0, all, 0, LivenessMonitor.RECORD_BYTES);
        System.arraycopy(b.record(), 0, all, LivenessMonitor.RECORD_BYTES, LivenessMonitor.RECORD_BYTES);
        assertThatThrownBy(() -> a.start(all)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_HEARTBEAT").hasMessageContaining("rank 0: 3 s").hasMessageContaining("rank 1: 10 s");
        assertThatThrownBy(() -> b.start(all)).isInstanceOf(ConfigException.class).hasMessageContaining("JDIST_HEARTBEAT");
    }
}
