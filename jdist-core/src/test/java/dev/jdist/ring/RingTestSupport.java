package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.RankThreads;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntFunction;

/** Test helpers: hostfiles on free loopback ports, in-process rings (one thread per rank). */
public final class RingTestSupport {
    private RingTestSupport() {}

    /** A hostfile of n ranks with k loopback addresses each, on free ports. */
    public static Path hostfile(Path dir, int n, int k) throws IOException {
        int[] ports = FreePorts.distinct(n * k);
        StringBuilder sb = new StringBuilder("[\n");
        for (int q = 0; q < n; q++) {
            sb.append("  [");
            for (int j = 0; j < k; j++) {
                sb.append(j > 0 ? ", " : "").append("\"127.0.0.1:").append(ports[q * k + j]).append('"');
            }
            sb.append(q < n - 1 ? "],\n" : "]\n");
        }
        sb.append("]\n");
        Path f = Files.createTempFile(dir, "ring-" + n + "x" + k + "-", ".json");
        Files.writeString(f, sb.toString());
        return f;
    }

    public static Map<String, String> env(int rank, Path hostfile, String timeoutSeconds) {
        Map<String, String> env = new HashMap<>();
        env.put("MLX_RANK", Integer.toString(rank));
        env.put("MLX_HOSTFILE", hostfile.toString());
        if (timeoutSeconds != null) env.put("JDIST_TIMEOUT", timeoutSeconds);
        return env;
    }

    /** Forms an n-rank ring in this JVM (one thread per rank) and runs {@code body} on every rank. */
    public static <T> List<T> onEveryRank(Path hostfile, int n, Map<String, String> extraEnv,
                                          Function<GroupImpl, T> body) throws Exception {
        return onEveryRank(hostfile, n, extraEnv, RingSettings.Tuning.DEFAULT, body);
    }

    /** {@link #onEveryRank(Path, int, Map, Function)} with the transports tuned as {@code tuning} says. */
    public static <T> List<T> onEveryRank(Path hostfile, int n, Map<String, String> extraEnv, RingSettings.Tuning tuning,
                                          Function<GroupImpl, T> body) throws Exception {
        return onEveryRank(n, rank -> {
            Map<String, String> env = env(rank, hostfile, "20");
            env.putAll(extraEnv);
            return RingSettings.fromEnvironment(true, env).orElseThrow().withTuning(tuning);
        }, body);
    }

    /** Forms an n-rank ring in this JVM (one thread per rank, rank r with {@code settings.apply(r)}) and runs {@code body}. */
    public static <T> List<T> onEveryRank(int n, IntFunction<RingSettings> settings, Function<GroupImpl, T> body)
            throws Exception {
        return RankThreads.run(n, 60, rank -> {
            try (GroupImpl g = RingGroup.connect(settings.apply(rank))) {
                return body.apply(g);
            }
        });
    }

    /**
     * sum_scatter on an in-process n-rank ring whose work buffer is bounded to {@code workBytes}: two rounds
     * per chunk size (the pieces need not divide the chunk, down to one element per rank) must give the sums
     * of one pass and leave the input unchanged. Returns every rank's failures ("" when right).
     */
    public static List<String> sumScatterInPieces(Path dir, int n, int k, long workBytes, Map<String, String> extraEnv)
            throws Exception {
        RingSettings.Tuning tuning = RingSettings.Tuning.DEFAULT.withSumScatterWorkBytes(workBytes);
        return onEveryRank(hostfile(dir, n, k), n, extraEnv, tuning, g -> {
            StringBuilder bad = new StringBuilder();
            int r = g.rank();
            for (int chunk : new int[] {1, 7, 1001, 300_000}) {
                // each piece runs the same code: a few thousand are as good a check as the 50 000 a 24-byte buffer
                // would cut 300 000 floats into (28 s of the default tier)
                if ((long) chunk * Float.BYTES / workBytes > 5_000) continue;
                int e = chunk * n;
                float[] v = new float[e];
                for (int i = 0; i < e; i++) v[i] = (i % 11) * (r + 1);
                Array in = Array.fromFloats(v, e);
                Array out = Array.zeros(DType.FLOAT32, chunk);
                for (int round = 0; round < 2; round++) {
                    g.sumScatter(in, out);
                    for (int i = 0; i < chunk; i++) {
                        float want = ((r * chunk + i) % 11) * n * (n + 1) / 2f;
                        if (out.getDouble(i) != want) {
                            bad.append("rank ").append(r).append(" chunk=").append(chunk).append(" i=").append(i)
                                    .append(" got ").append(out.getDouble(i)).append(" want ").append(want).append('\n');
                            break;
                        }
                    }
                }
                for (int i = 0; i < e; i += 97) {
                    if (in.getDouble(i) != v[i]) {
                        bad.append("rank ").append(r).append(": input changed at ").append(i).append('\n');
                        break;
                    }
                }
                if (in.getDouble(e - 1) != v[e - 1]) bad.append("rank ").append(r).append(": input changed at the end\n");
            }
            return bad.toString();
        });
    }
}
