package dev.jdist.ring;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Separate JVMs per rank ({@link PeerOperationsProgram}) with a job token, over TCP and shared memory: broadcast,
 * barrier, all_to_all(v), gather, scatter, any-peer send/recv and batches give the documented bytes on every rank, for
 * every dtype, on the world and on a split, with n = 2..5 (non-powers of two included).
 */
class PeerOperationsMultiProcessIT {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"2,tcp", "3,tcp", "4,tcp", "5,tcp", "3,shm", "4,shm"})
    @Timeout(600)
    void everyRankGetsTheDocumentedBytes(int n, String transport) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        Map<String, String> env = Map.of("JDIST_JOB_TOKEN", "peer-ops-it", "JDIST_TIMEOUT", "120", "JDIST_TRANSPORT", transport);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) ranks.start(dir, r, hf, PeerOperationsProgram.class, env);
            for (int r = 0; r < n; r++) {
                int code = ranks.await(r, 540);
                assertThat(code).as("rank %d exit code; outputs:%n%s", r, ranks.allOutputs()).isZero();
            }
            for (int r = 0; r < n; r++) assertThat(ranks.output(r)).contains("rank " + r + " of " + n + ": OK (" + transport);
        }
    }
}
