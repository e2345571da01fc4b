package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.memory.ArrayMemory;
import dev.jdist.memory.ArrayMemoryTest;
import dev.jdist.ring.RingTestSupport;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The API's out-of-place collectives over real rings (one thread per rank, loopback) when their
 * outputs come from dirty cached blocks: Group allocates them without a zero fill, so every byte
 * must be written by the backend.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ArrayCacheRingTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"2,1,tcp", "2,2,tcp", "3,1,tcp", "2,1,shm", "3,1,shm"})
    void outOfPlaceCollectivesOverwriteDirtyCachedOutputs(int n, int k, String transport) throws Exception {
        int chunk = 300_000;                                  // 1.2 MB per rank's chunk: every output is large
        int e = chunk * n;
        ArrayMemory memory = ArrayMemory.shared();
        long hitsBefore = memory.stats().hits();
        // NaN-filled blocks of every output's size class, returned to the cache before the ring starts
        long outstanding = memory.stats().outstandingBytes();
        List<Array> dirty = new ArrayList<>();
        for (int i = 0; i < 2 * n; i++) {
            for (int count : new int[] {chunk, e, e * n}) dirty.add(Array.full(DType.FLOAT32, Float.NaN, count));
        }
        dirty = null;
        // back from the GC: cached (or, past the cache's bound, cached in place of older blocks)
        if (memory.caching()) ArrayMemoryTest.gcUntil(() -> memory.stats().outstandingBytes() <= outstanding, "dirty blocks back in the cache");

        Path hf = RingTestSupport.hostfile(dir, n, k);
        List<String> failures = RingTestSupport.onEveryRank(hf, n, Map.of("JDIST_TRANSPORT", transport), impl -> {
            StringBuilder bad = new StringBuilder();
            try (Group g = new Group(impl, OperationTrace.WORLD)) {
                int r = g.rank();
                float[] v = new float[e];
                for (int i = 0; i < e; i++) v[i] = (i % 7) + r;
                Array x = Array.fromFloats(v, e);
                for (int round = 0; round < 3; round++) {
                    System.gc();                              // bring the last round's dirtied outputs back
                    Array sum = g.allSum(x);
                    for (int i = 0; i < e; i++) {
                        if (sum.getDouble(i) != n * (i % 7) + n * (n - 1) / 2f) { bad.append("allSum i=" + i + "\n"); break; }
                    }
                    Array max = g.allMax(x);
                    for (int i = 0; i < e; i++) {
                        if (max.getDouble(i) != (i % 7) + n - 1) { bad.append("allMax i=" + i + "\n"); break; }
                    }
                    Array gathered = g.allGather(x);
                    assertThat(gathered.shape()).containsExactly(e * n);
                    outer:
                    for (int q = 0; q < n; q++) {
                        for (int i = 0; i < e; i++) {
                            if (gathered.getDouble((long) q * e + i) != (i % 7) + q) {
                                bad.append("allGather q=" + q + " i=" + i + "\n");
                                break outer;
                            }
                        }
                    }
                    Array part = g.sumScatter(x);
                    assertThat(part.shape()).containsExactly(chunk);
                    for (int i = 0; i < chunk; i++) {
                        if (part.getDouble(i) != n * ((r * chunk + i) % 7) + n * (n - 1) / 2f) {
                            bad.append("sumScatter i=" + i + "\n");
                            break;
                        }
                    }
                    Array received = null;
                    if (r == 0) g.send(x, 1);
                    if (r == 1) {
                        received = g.recv(new int[] {e}, DType.FLOAT32, 0);
                        for (int i = 0; i < e; i++) {
                            if (received.getDouble(i) != i % 7) { bad.append("recv i=" + i + "\n"); break; }
                        }
                    }
                    // dirty every output before dropping it, so the next round may get it back dirty
                    for (Array a : new Array[] {sum, max, gathered, part, received}) {
                        if (a != null) a.segment().fill((byte) 0xFF);
                    }
                }
            }
            return bad.isEmpty() ? "" : "rank " + impl.rank() + ": " + bad;
        });
        assertThat(String.join("", failures)).isEmpty();
        if (memory.caching()) assertThat(memory.stats().hits()).as("outputs reused cached blocks").isGreaterThan(hitsBefore);
    }
}
