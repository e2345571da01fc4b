package dev.jdist.ring;

import dev.jdist.testing.LongTest;
import dev.jdist.mesh.PeerMesh;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Separate JVMs with {@code JDIST_TRANSPORT=shm}: {@link RingCheckProgram} (every op, every dtype,
 * several parts, split, sumScatter, send/recv) over shared memory; all ranks must exit 0, report the
 * shm transport, and leave no file behind.
 */
class ShmMultiProcessIT {

    @TempDir
    Path dir;

    /** Shared-memory files of these processes still present. */
    static List<Path> leftovers(RankProcesses ranks) throws IOException {
        // the ring's files and the peer mesh's (pairs on one host, when every rank is jdist)
        List<String> prefixes = ranks.processes().stream().flatMap(p -> Stream.of(ShmSetup.FILE_PREFIX + p.pid() + "-",
                PeerMesh.SHARED_MEMORY_FILE_PREFIX + p.pid() + "-")).toList();
        try (Stream<Path> s = Files.list(ShmSetup.directory())) {
            return s.filter(p -> prefixes.stream().anyMatch(x -> p.getFileName().toString().startsWith(x))).toList();
        }
    }

    @ParameterizedTest(name = "{0} ranks, k = {1}, buffer {2} KiB")
    @CsvSource({"2,2,64", "3,1,"})
    @Timeout(300)
    void everyOpEveryDtypeOverSharedMemory(int n, int k, String bufferKib) throws Exception {
        check(n, k, bufferKib);
    }

    /** The rest of the sweep (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks, k = {1}, buffer {2} KiB")
    @CsvSource({"2,1,", "4,1,16"})
    @Timeout(300)
    void everyOpEveryDtypeOverSharedMemoryRestOfTheSweep(int n, int k, String bufferKib) throws Exception {
        check(n, k, bufferKib);
    }

    private void check(int n, int k, String bufferKib) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, k);
        // MLX's ring and rules (RingCheckProgram expects them): no member probe
        Map<String, String> env = new HashMap<>(Map.of("JDIST_TIMEOUT", "60", "JDIST_TRANSPORT", "shm", MemberProbe.VARIABLE, "off"));
        if (bufferKib != null) env.put("JDIST_SHM_BUFFER_KIB", bufferKib);   // arrays many times the buffer
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) ranks.start(dir, r, hf, RingCheckProgram.class, env);
            for (int r = 0; r < n; r++) {
                int code = ranks.await(r, 240);
                assertThat(code).as("rank %d exit code; outputs:%n%s", r, ranks.allOutputs()).isZero();
            }
            for (int r = 0; r < n; r++) assertThat(ranks.output(r)).contains("rank " + r + " of " + n + ": OK (transport shm)");
            assertThat(leftovers(ranks)).isEmpty();
        }
    }
}
