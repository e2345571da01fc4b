package dev.jdist.djl;

import dev.jdist.testing.ChildProcesses;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rank of the digits training killed mid-epoch (SIGKILL after its 10th step, in the middle of the first epoch of 23): every other
 * rank's {@code EasyTrain.fit} ends with jdist's typed error within the liveness bound (docs/reliability.md: at most
 * two heartbeat intervals; here {@code JDIST_HEARTBEAT=4s}), and the program exits with its status 3.
 * The ranks are started by hand with a job token, as the launcher would, but without the launcher, which would end
 * the job itself when one rank dies.
 */
@Timeout(240)
class KilledRankIT {
    static final int N = 4, VICTIM = 2;
    static final long HEARTBEAT_S = 4;

    @TempDir
    Path dir;

    @BeforeAll
    static void data() {
        DigitsRuns.requireData();
    }

    @Test
    void aRankKilledMidEpochEndsEveryOtherRanksFitWithJdistsTypedError() throws Exception {
        Path hosts = TestModels.hostfile(dir, N);
        try (ChildProcesses p = new ChildProcesses()) {
            for (int r = 0; r < N; r++) {
                p.start(dir, "rank" + r, DigitsRuns.rank("--epochs", "1000", "--progress"), Map.of("MLX_RANK", String.valueOf(r),
                        "MLX_HOSTFILE", hosts.toString(), "JDIST_JOB_TOKEN", "killed-rank-it", "JDIST_HEARTBEAT", HEARTBEAT_S + "s"));
            }
            p.awaitOutput(VICTIM, "rank " + VICTIM + " of " + N + ": step 10\n", 150);
            p.process(VICTIM).destroyForcibly();
            long killed = System.nanoTime();
            for (int r = 0; r < N; r++) {
                if (r == VICTIM) continue;
                // bounded only to catch a hang: the bound the reliability page states, plus time to print
                p.awaitOutput(r, "rank " + r + " of " + N + ": fit ended with dev.jdist.", 2 * HEARTBEAT_S + 10);
            }
            double seconds = (System.nanoTime() - killed) / 1e9;
            for (int r = 0; r < N; r++) {
                if (r == VICTIM) continue;
                assertThat(p.await(r, 30)).as("rank %d's exit status%n%s", r, p.allOutputs()).isEqualTo(3);
                assertThat(p.output(r)).as("rank %d's error names its type and the lost rank", r)
                        .containsPattern("fit ended with dev\\.jdist\\.(PeerLostException|PeerUnresponsiveException): .*rank " + VICTIM);
            }
            System.out.printf("KilledRankIT: every surviving rank's fit ended %.1f s after the kill%n", seconds);
        }
    }
}
