package dev.jdist.ring;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

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
        // files are deleted once set up: none while looping, none after the failure
        RingFaultScenarios.killedRankFailsEveryOther(dir, 1, Map.of("JDIST_TRANSPORT", "shm"),
                ranks -> assertThat(ShmMultiProcessIT.leftovers(ranks)).isEmpty());
    }

    @Test
    void aStoppedRankMakesTheOthersFailAfterTheDeadline() throws Exception {
        RingFaultScenarios.stoppedRankFailsTheOthersAfterTheDeadline(dir, Map.of("JDIST_TRANSPORT", "shm"));
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
