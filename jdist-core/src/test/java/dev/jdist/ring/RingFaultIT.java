package dev.jdist.ring;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Separate JVMs: a rank that dies or stops mid-loop makes every other rank fail, naming the lost peer, in bounded time. */
@Timeout(300)
class RingFaultIT {

    @TempDir
    Path dir;

    @Test
    void killingOneRankMidLoopFailsEveryOtherRankWithPeerLost() throws Exception {
        RingFaultScenarios.killedRankFailsEveryOther(dir, 2, Map.of(), ranks -> { });
    }

    @Test
    void aStoppedRankMakesTheOthersFailAfterTheDeadline() throws Exception {
        RingFaultScenarios.stoppedRankFailsTheOthersAfterTheDeadline(dir, Map.of());
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
