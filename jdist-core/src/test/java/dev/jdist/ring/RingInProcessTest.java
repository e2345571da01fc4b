package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Rings of 2..4 ranks in one JVM (a thread per rank) over loopback: values of every op. */
@Timeout(120)
class RingInProcessTest {

    @TempDir
    Path dir;

    @Test
    void smallSocketWindowsGiveTheSameResults() throws Exception {
        // the TCP transport cuts every transfer into ByteBuffer views of at most 1 GiB; with 1000-byte views
        // (not a multiple of the element size) the same code paths run on small arrays
        RingSettings.Tuning smallWindows = RingSettings.Tuning.DEFAULT.withSocketWindowBytes(1000);
        allOpsAgree(3, 2, smallWindows);
        allOpsAgree(2, 1, smallWindows);
    }

    @ParameterizedTest
    @CsvSource({"2,1", "2,2", "3,1", "3,2", "4,1"})
    void allOpsAgree(int n, int k) throws Exception {
        allOpsAgree(n, k, RingSettings.Tuning.DEFAULT);
    }

    private void allOpsAgree(int n, int k, RingSettings.Tuning tuning) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, k);
        List<String> failures = RingTestSupport.onEveryRank(hf, n, Map.of(), tuning, g -> {
            StringBuilder bad = new StringBuilder();
            int r = g.rank();
            for (int e : new int[] {0, 1, n - 1, n, 10, 1000, 3 * 262144 * 2 * 2 / 4 + 13}) {
                float[] v = new float[e];
                for (int i = 0; i < e; i++) v[i] = (i % 7) + r;
                Array in = Array.fromFloats(v, e);
                Array out = Array.zeros(DType.FLOAT32, e);
                g.allReduce(in, out, ReduceOp.SUM);
                for (int i = 0; i < e; i++) {
                    float want = n * (i % 7) + n * (n - 1) / 2f;
                    if (out.getDouble(i) != want) {
                        bad.append("rank ").append(r).append(" E=").append(e).append(" i=").append(i).append(" got ")
                                .append(out.getDouble(i)).append(" want ").append(want).append('\n');
                        break;
                    }
                }
                g.allReduce(in, out, ReduceOp.MAX);
                for (int i = 0; i < e; i++) {
                    if (out.getDouble(i) != (i % 7) + n - 1) { bad.append("max E=" + e + " i=" + i + "\n"); break; }
                }
                Array gathered = Array.zeros(DType.FLOAT32, e * n);
                g.allGather(in, gathered);
                for (int q = 0; q < n; q++) {
                    for (int i = 0; i < e; i++) {
                        if (gathered.getDouble((long) q * e + i) != (i % 7) + q) {
                            bad.append("gather E=" + e + " q=" + q + " i=" + i + "\n");
                            q = n;
                            break;
                        }
                    }
                }
            }
            return bad.toString();
        });
        assertThat(String.join("", failures)).isEmpty();
    }

    @Test
    void aRingFormsFromSettingsBuiltInMemory() throws Exception {
        // what a launcher that places ranks by other means than MLX_HOSTFILE does: RingSettings.of + RingGroup.connect
        int n = 3;
        int[] ports = FreePorts.distinct(n);
        List<List<RingHostfile.Address>> ranks = new ArrayList<>();
        for (int q = 0; q < n; q++) {
            ranks.add(List.of(new RingHostfile.Address("127.0.0.1:" + ports[q], "127.0.0.1", ports[q],
                    new InetSocketAddress("127.0.0.1", ports[q]))));
        }
        RingHostfile hf = new RingHostfile(null, List.copyOf(ranks));
        List<Double> sums = RingTestSupport.onEveryRank(n, rank -> RingSettings.of(rank, hf), g -> {
            Array out = Array.zeros(DType.FLOAT32, 1);
            g.allReduce(Array.fromFloats(new float[] {g.rank() + 1}, 1), out, ReduceOp.SUM);
            return out.getDouble(0);
        });
        assertThat(sums).containsOnly(6.0).hasSize(n);
    }

    @ParameterizedTest
    @CsvSource({"2,1,1000", "3,2,1000", "3,1,24", "2,2,16777216", "4,1,4096"})
    void sumScatterInPiecesOfTheBoundedWorkBuffer(int n, int k, long workBytes) throws Exception {
        // sum_scatter works through a bounded buffer, piece by piece, over TCP
        assertThat(String.join("", RingTestSupport.sumScatterInPieces(dir, n, k, workBytes, Map.of()))).isEmpty();
    }
}
