package dev.jdist.ring;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Separate JVMs: a rank that dies or stops mid-loop makes every other rank fail, naming the lost peer, in bounded time. */
@Timeout(300)
class RingFaultIT {

    @TempDir
    Path dir;

    @Test
    void killingOneRankMidLoopFailsEveryOtherRankWithPeerLost() throws Exception {
        int n = 4;
        Path hf = RingTestSupport.hostfile(dir, n, 2);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                ranks.start(dir, r, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "30"), "100000000", "240");
            }
            ranks.awaitLooping(n);
            long pid = ranks.processes.get(2).pid();
            ranks.processes.get(2).destroyForcibly();   // SIGKILL to the one process we chose, by its handle
            assertThat(ranks.processes.get(2).waitFor(20, TimeUnit.SECONDS)).as("pid %d ended", pid).isTrue();
            for (int r : new int[] {0, 1, 3}) {
                int code = ranks.await(r, 45);   // well within the 30 s deadline plus JVM exit
                String out = ranks.output(r);
                assertThat(code).as("rank %d exit code (3 = PeerLost); output:%n%s", r, out).isEqualTo(3);
                assertThat(out).contains("FAILED PeerLostException").contains("rank " + r).contains("127.0.0.1:");
            }
            // a direct neighbour names the dead rank (the other may hear of it first through the ring)
            assertThat(ranks.output(1) + ranks.output(3)).contains("rank 2 (");
        }
    }

    @Test
    void aStoppedRankMakesTheOthersFailAfterTheDeadline() throws Exception {
        int n = 3;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                ranks.start(dir, r, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "3"), "100000000", "240");
            }
            ranks.awaitLooping(n);
            long pid = ranks.processes.get(1).pid();
            Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(pid)).inheritIO().start();
            assertThat(stop.waitFor(10, TimeUnit.SECONDS)).isTrue();
            try {
                int c0 = ranks.await(0, 40);
                int c2 = ranks.await(2, 40);
                String all = ranks.allOutputs();
                assertThat(c0).as(all).isIn(3, 4);
                assertThat(c2).as(all).isIn(3, 4);
                assertThat(c0 == 4 || c2 == 4).as("one neighbour of the stopped rank hit the deadline:%n%s", all).isTrue();
                assertThat(all).contains("DeadlineExceededException").contains("JDIST_TIMEOUT").contains("rank 1 (");
            } finally {
                ranks.processes.get(1).destroyForcibly();   // SIGKILL also ends a stopped process
            }
        }
    }

    @Test
    void aRankWhosePeerNeverStartsReportsItAfterTheDeadline() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            ranks.start(dir, 0, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "3", "MLX_RING_VERBOSE", ""), "10", "60");
            int code = ranks.await(0, 60);
            String out = ranks.output(0);
            assertThat(code).as(out).isEqualTo(5);
            assertThat(out).contains("ConnectFailedException").contains("rank 1").contains("attempt").contains("127.0.0.1:");
            assertThat(out).as("MLX_RING_VERBOSE (even empty) logs progress").contains("[ring] rank 0: listening on");
        }
    }

    @Test
    void aBadRankIsAConfigErrorBeforeAnyNetworking() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            ranks.start(dir, 0, hf, RingLoopProgram.class, Map.of("MLX_RANK", "one"), "10", "60");
            int code = ranks.await(0, 60);
            assertThat(code).as(ranks.output(0)).isEqualTo(6);
            assertThat(ranks.output(0)).contains("MLX_RANK").contains("one");
        }
    }
}
