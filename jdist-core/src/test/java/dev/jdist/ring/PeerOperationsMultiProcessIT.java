package dev.jdist.ring;

import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
    @CsvSource({"3,tcp", "4,shm"})
    @Timeout(600)
    void everyRankGetsTheDocumentedBytes(int n, String transport) throws Exception {
        check(n, transport);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"2,tcp", "4,tcp", "5,tcp", "3,shm"})
    @Timeout(600)
    void everyRankGetsTheDocumentedBytesRestOfTheSweep(int n, String transport) throws Exception {
        check(n, transport);
    }

    private void check(int n, String transport) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        Map<String, String> env = Map.of("JDIST_JOB_TOKEN", "peer-ops-it", "JDIST_TIMEOUT", "120", "JDIST_TRANSPORT", transport);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) ranks.start(dir, r, hf, PeerOperationsProgram.class, env);
            for (int r = 0; r < n; r++) {
                int code = ranks.await(r, 540);
                assertThat(code).as("rank %d exit code; outputs:%n%s", r, ranks.allOutputs()).isZero();
            }
            for (int r = 0; r < n; r++) {
                String line = "rank " + r + " of " + n + ": OK (" + transport;
                String ok = ranks.output(r).lines().filter(l -> l.contains(line))
                        .findFirst().orElse("");
                assertThat(ok).as("rank %d's output:%n%s", r, ranks.output(r)).isNotEmpty();
                // over shm every mesh pair is on this host, so every connection runs through shared memory; over tcp none
                Matcher m = Pattern.compile("(\\d+) mesh connection\\(s\\), (\\d+) over shared memory")
                        .matcher(ok);
                assertThat(m.find()).as(ok).isTrue();
                assertThat(Integer.parseInt(m.group(1))).as(ok).isPositive();
                assertThat(m.group(2)).as(ok).isEqualTo(transport.equals("shm") ? m.group(1) : "0");
            }
            assertThat(ShmMultiProcessIT.leftovers(ranks)).as("no file left in /dev/shm").isEmpty();
        }
    }
}
