package dev.jdist.ring;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Separate JVMs on shared memory ({@code JDIST_TRANSPORT=shm}): a rank killed or stopped mid-loop
 * makes every other rank fail in bounded time, no shared-memory file outlives the set-up, and ranks
 * that disagree on the transport fail with a message that says so.
 */
@Timeout(300)
class ShmFaultIT {

    @TempDir
    Path dir;

    @Test
    void killingOneRankMidLoopFailsEveryOtherRankWithPeerLostAndLeavesNoFile() throws Exception {
        int n = 4;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                ranks.start(dir, r, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "30", "JDIST_TRANSPORT", "shm"),
                        "100000000", "240");
            }
            ranks.awaitLooping(n);
            assertThat(ShmMultiProcessIT.leftovers(ranks)).as("files are deleted once set up").isEmpty();
            long pid = ranks.processes.get(2).pid();
            ranks.processes.get(2).destroyForcibly();   // SIGKILL to the one process we chose, by its handle
            assertThat(ranks.processes.get(2).waitFor(20, TimeUnit.SECONDS)).as("pid %d ended", pid).isTrue();
            for (int r : new int[] {0, 1, 3}) {
                int code = ranks.await(r, 45);
                String out = ranks.output(r);
                assertThat(code).as("rank %d exit code (3 = PeerLost); output:%n%s", r, out).isEqualTo(3);
                assertThat(out).contains("FAILED PeerLostException").contains("rank " + r).contains("127.0.0.1:");
            }
            assertThat(ranks.output(1) + ranks.output(3)).contains("rank 2 (");
            assertThat(ShmMultiProcessIT.leftovers(ranks)).isEmpty();
        }
    }

    @Test
    void aStoppedRankMakesTheOthersFailAfterTheDeadline() throws Exception {
        int n = 3;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                ranks.start(dir, r, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "3", "JDIST_TRANSPORT", "shm"),
                        "100000000", "240");
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
    void ranksThatDisagreeOnTheTransportFailSayingSo() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            ranks.start(dir, 0, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "10", "JDIST_TRANSPORT", "shm"), "1000", "60");
            ranks.start(dir, 1, hf, RingLoopProgram.class, Map.of("JDIST_TIMEOUT", "10"), "1000", "60");
            int c0 = ranks.await(0, 60);
            int c1 = ranks.await(1, 60);
            String all = ranks.allOutputs();
            assertThat(c0).as(all).isEqualTo(6);   // ConfigException
            assertThat(ranks.output(0)).contains("rank 1 did not take part").contains("JDIST_TRANSPORT");
            assertThat(c1).as(all).isIn(3, 4);     // its ring broke under it
        }
    }
}
