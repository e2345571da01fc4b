package dev.jdist.ring;

import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Separate JVMs per rank, started with MLX_RANK/MLX_HOSTFILE: every op, every dtype, split and
 * sumScatter ({@link RingCheckProgram}); all ranks must exit 0.
 */
class RingMultiProcessIT {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0} ranks, k = {1}")
    @CsvSource({"2,2", "3,1"})
    @Timeout(300)
    void everyOpEveryDtype(int n, int k) throws Exception {
        check(n, k);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks, k = {1}")
    @CsvSource({"2,1", "3,2", "4,1", "4,2"})
    @Timeout(300)
    void everyOpEveryDtypeRestOfTheSweep(int n, int k) throws Exception {
        check(n, k);
    }

    private void check(int n, int k) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, k);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) ranks.start(dir, r, hf, RingCheckProgram.class,
                    Map.of("JDIST_TIMEOUT", "60", MemberProbe.VARIABLE, "off"));   // MLX's ring and rules: no probe
            for (int r = 0; r < n; r++) {
                int code = ranks.await(r, 240);
                assertThat(code).as("rank %d exit code; outputs:%n%s", r, ranks.allOutputs()).isZero();
            }
            for (int r = 0; r < n; r++) assertThat(ranks.output(r)).contains("rank " + r + " of " + n + ": OK");
        }
    }
}
