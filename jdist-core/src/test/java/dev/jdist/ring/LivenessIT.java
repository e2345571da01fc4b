package dev.jdist.ring;

import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The liveness watch with real processes (docs/reliability.md): ring ranks of one job with a job token, over TCP and
 * over shared memory, JDIST_TIMEOUT unset (30 minutes with the watch). A killed or stopped rank is reported on every
 * other rank within JDIST_HEARTBEAT with the typed error naming it; a healthy rank that computes longer than the bound
 * between collectives is waited for; ranks that call different collectives fail alike, before any data moves with
 * JDIST_DEBUG=detail and once the call stalls without it.
 */
@Timeout(300)
class LivenessIT {
    static final String BOUND = "3s";

    @TempDir
    Path dir;

    private static Map<String, String> env(String transport, String... kv) {
        Map<String, String> env = new HashMap<>(Map.of("JDIST_JOB_TOKEN", "liveness-it-" + System.nanoTime(), "JDIST_HEARTBEAT", BOUND,
                "JDIST_TRANSPORT", transport));
        for (int i = 0; i < kv.length; i += 2) env.put(kv[i], kv[i + 1]);
        return env;
    }

    private static RankProcesses start(Path dir, int n, Map<String, String> env, String... args) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        RankProcesses ranks = new RankProcesses();
        for (int r = 0; r < n; r++) ranks.start(dir, r, hf, LivenessProgram.class, env, args);
        return ranks;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aKilledRankIsNamedOnEveryOtherRank(String transport) throws Exception {
        try (RankProcesses ranks = start(dir, 4, env(transport), "loop", "100000000", "240")) {
            ranks.awaitLooping(4);
            ranks.process(2).destroyForcibly();   // SIGKILL, by handle
            assertThat(ranks.process(2).waitFor(20, TimeUnit.SECONDS)).isTrue();
            for (int r : new int[] {0, 1, 3}) {
                int code = ranks.await(r, 60);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 3 PeerLost or 8 PeerUnresponsive; output:%n%s", r, out).isIn(3, 8);
                assertThat(out).as("rank %d names the killed rank, not the neighbour its failure travelled through", r)
                        .contains("peer=2 ").contains("rank=" + r + " ").contains("rank 2 ");
            }
        }
    }

    /** Recursive doubling over the mesh's shared-memory pairs: the killed rank is still named, not a pair it failed through. */
    @Test
    void aKilledRankIsNamedOverSharedMemoryMeshPairs() throws Exception {
        try (RankProcesses ranks = start(dir, 4, env("shm", "JDIST_ALGO", "rd"), "loop", "100000000", "240")) {
            ranks.awaitLooping(4);
            for (int r = 0; r < 4; r++) {
                assertThat(ranks.output(r)).as("rank %d runs recursive doubling through shared memory", r)
                        .contains("looping (mesh connections: 2, over shared memory: 2)");
            }
            ranks.process(2).destroyForcibly();   // SIGKILL, by handle
            assertThat(ranks.process(2).waitFor(20, TimeUnit.SECONDS)).isTrue();
            for (int r : new int[] {0, 1, 3}) {
                int code = ranks.await(r, 60);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 3 PeerLost or 8 PeerUnresponsive; output:%n%s", r, out).isIn(3, 8);
                assertThat(out).as("rank %d names the killed rank", r).contains("peer=2 ").contains("rank=" + r + " ").contains("rank 2 ");
            }
            assertThat(ShmMultiProcessIT.leftovers(ranks)).as("no file left in /dev/shm").isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})   // over shm: the long tier, below
    void aStoppedRankIsReportedWithinTheHeartbeatBoundNotTheDeadline(String transport) throws Exception {
        try (RankProcesses ranks = start(dir, 3, env(transport), "loop", "100000000", "240")) {
            ranks.awaitLooping(3);
            long pid = ranks.process(1).pid();
            Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(pid)).inheritIO().start();
            assertThat(stop.waitFor(10, TimeUnit.SECONDS)).isTrue();
            try {
                for (int r : new int[] {0, 2}) {
                    int code = ranks.await(r, 60);   // JDIST_TIMEOUT is 30 min here: only the watch can end it this soon
                    String out = ranks.output(r);
                    assertThat(code).as("rank %d: 8 PeerUnresponsive; output:%n%s", r, out).isEqualTo(8);
                    assertThat(out).contains("FAILED PeerUnresponsiveException peer=1 ").contains("state=STOPPED")
                            .contains("no heartbeat for").contains("pid " + pid);
                }
            } finally {
                ranks.process(1).destroyForcibly();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})   // over shm: the long tier, below
    void aHealthyRankThatComputesLongerThanTheBoundIsWaitedFor(String transport) throws Exception {
        // rank 1 sleeps 10 s (over three heartbeat bounds) before its 6th all_sum; the others wait in it
        try (RankProcesses ranks = start(dir, 3, env(transport), "loop", "12", "240", "1", "10", "5")) {
            for (int r = 0; r < 3; r++) {
                int code = ranks.await(r, 120);
                assertThat(code).as("rank %d; output:%n%s", r, ranks.allOutputs()).isZero();
                assertThat(ranks.output(r)).contains("rank " + r + " finished");
            }
            assertThat(ranks.output(1)).contains("pausing 10 s");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"op", "dtype", "shape"})
    void withDetailRanksCallingDifferentCollectivesFailAlike(String kind) throws Exception {
        try (RankProcesses ranks = start(dir, 4, env("tcp", "JDIST_DEBUG", "detail"), "mismatch", kind, "2")) {
            String expected = switch (kind) {
                case "op" -> "rank 2 is in all_sum float32[1024] #1; ranks 0, 1, 3 are in all_gather int32[12] #1";
                case "dtype" -> "rank 2 is in all_sum int32[256] #1; ranks 0, 1, 3 are in all_sum float32[256] #1";
                default -> "rank 2 is in all_sum float32[2,128] #1; ranks 0, 1, 3 are in all_sum float32[256] #1";
            };
            for (int r = 0; r < 4; r++) {
                int code = ranks.await(r, 90);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 9 CollectiveMismatch; output:%n%s", r, out).isEqualTo(9);
                assertThat(out).contains(expected);
            }
        }
    }

    /**
     * Without JDIST_DEBUG=detail nothing is compared before data moves: ranks whose byte counts happen to fit finish the
     * mismatched call with wrong values (here ranks 0, 1, 3; they then work for 10 s), while rank 2 waits for bytes that
     * never come. The heartbeats carry each rank's recent collectives, so the watch names the mismatch within about a
     * heartbeat interval, and every rank fails with it: rank 2 at once, the others at their next collective.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp"})   // over shm: the long tier, below
    void withoutDetailAMismatchThatStallsIsFoundByTheWatch(String transport) throws Exception {
        try (RankProcesses ranks = start(dir, 4, env(transport), "mismatch", "op", "2", "10")) {
            for (int r = 0; r < 4; r++) {
                int code = ranks.await(r, 90);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 9 CollectiveMismatch; output:%n%s", r, out).isEqualTo(9);
                assertThat(out).contains("rank 2 is in all_sum float32[1024] #1").contains("all_gather int32[12] #1");
            }
        }
    }

    /**
     * The same inside a group made by split (ranks 0 and 2 of 4): the heartbeats carry the split group's calls as well,
     * so its members' different collectives are found, and every rank of the job fails with it, the other group's too.
     */
    @Test
    void withoutDetailAMismatchInAGroupMadeBySplitIsFoundByTheWatch() throws Exception {
        try (RankProcesses ranks = start(dir, 4, env("tcp"), "split-mismatch", "2", "10")) {
            for (int r = 0; r < 4; r++) {
                int code = ranks.await(r, 90);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 9 CollectiveMismatch; output:%n%s", r, out).isEqualTo(9);
                assertThat(out).contains("rank 2 is in all_sum float32[1024] #1").contains("rank 0 is in all_gather int32[12] #1")
                        .contains("in group world/split@1(color=0) of job ranks 0, 2");
            }
        }
    }

    // ------------------------------------------------------------------ the long tier: the same over shared memory

    @LongTest
    @Test
    void aStoppedRankIsReportedWithinTheHeartbeatBoundNotTheDeadlineOverSharedMemory() throws Exception {
        aStoppedRankIsReportedWithinTheHeartbeatBoundNotTheDeadline("shm");
    }

    @LongTest
    @Test
    void aHealthyRankThatComputesLongerThanTheBoundIsWaitedForOverSharedMemory() throws Exception {
        aHealthyRankThatComputesLongerThanTheBoundIsWaitedFor("shm");
    }

    @LongTest
    @Test
    void withoutDetailAMismatchThatStallsIsFoundByTheWatchOverSharedMemory() throws Exception {
        withoutDetailAMismatchThatStallsIsFoundByTheWatch("shm");
    }
}
