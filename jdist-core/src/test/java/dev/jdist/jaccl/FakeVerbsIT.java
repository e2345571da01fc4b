package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole JACCL backend — TCP side channel, {@link VerbsTransport}'s FFM calls (exported symbols
 * and the ops-table function pointers), struct layouts, the QP state machine and the algorithms —
 * against a fake libibverbs compiled here with gcc from the installed rdma-core headers
 * ({@code fake_ibverbs.c}). The fake joins all QPs of the process into one fabric and records every
 * deviation from what docs/reference/collectives.md §4.3/§4.4 prescribes (CQ size, QP caps, masks, PSN 7, MTU 1024, GID index,
 * whole-frame SGEs, lkeys of the right PD, ≤ 32 outstanding work requests, wr_id kinds).
 */
class FakeVerbsIT {
    static Path library;

    static synchronized Path library(Path dir) throws Exception {
        Requirements.require(Files.exists(Path.of("/usr/include/infiniband/verbs.h")),
                "the rdma-core headers (/usr/include/infiniband/verbs.h) are missing; install libibverbs-dev");
        if (library != null) return library;
        dir = Files.createTempDirectory("jdist-fakeverbs");   // outlives each test's @TempDir: the library stays loaded
        dir.toFile().deleteOnExit();
        Path src = dir.resolve("fake_ibverbs.c");
        try (InputStream in = FakeVerbsIT.class.getResourceAsStream("fake_ibverbs.c")) {
            Files.write(src, in.readAllBytes());
        }
        Path so = dir.resolve("libjdistfakeverbs-" + ProcessHandle.current().pid() + ".so");
        CommandResult gcc = CommandResult.run(Duration.ofSeconds(60),
                "gcc", "-shared", "-fPIC", "-Wall", "-o", so.toString(), src.toString());
        assertThat(gcc.exitCode()).as("%s", gcc).isZero();
        src.toFile().deleteOnExit();
        so.toFile().deleteOnExit();
        library = so;
        return so;
    }

    static String violations(Path so) throws Throwable {
        MemorySegment f = SymbolLookup.libraryLookup(so, Arena.global()).find("fake_violations").orElseThrow();
        MethodHandle h = Linker.nativeLinker().downcallHandle(f, FunctionDescriptor.of(ValueLayout.ADDRESS));
        return ((MemorySegment) h.invokeExact()).reinterpret(8192).getString(0);
    }

    /** A device matrix in which every rank has a (fake) device to every other: a mesh of {@code n}. */
    static String fullMesh(int n) {
        StringBuilder m = new StringBuilder("[");
        for (int q = 0; q < n; q++) {
            m.append(q == 0 ? "[" : ",[");
            for (int p = 0; p < n; p++) m.append(p == 0 ? "" : ",").append(p == q ? "null" : "\"fake" + (p % 4) + "\"");
            m.append("]");
        }
        return m.append("]").toString();
    }

    /** What one rank does with its group (a thread per rank; {@code rank} is its MLX_RANK). */
    interface RankBody {
        void run(JacclGroup g, int rank) throws Exception;
    }

    /**
     * Forms an n-rank JACCL group over the fake library from MLX's variables, one thread per rank (the fake joins the
     * queue pairs of one process), runs {@code body} on every rank within {@code seconds}, and checks that the fake saw
     * no deviation from the reference.
     */
    void runRanks(Path dir, String matrix, int n, boolean ring, String qp, long seconds, RankBody body) throws Throwable {
        Path so = library(dir);
        Path file = dir.resolve("devices-" + System.nanoTime() + ".json");
        Files.writeString(file, matrix);
        int port = FreePorts.one();
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            Future<?>[] fs = new Future<?>[n];
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs[r] = pool.submit(() -> {
                    Map<String, String> env = new HashMap<>(Map.of("MLX_RANK", String.valueOf(rank), "MLX_IBV_DEVICES", file.toString(),
                            "MLX_JACCL_COORDINATOR", "127.0.0.1:" + port, "JDIST_JACCL_LIB", so.toString(),
                            "JDIST_JACCL_QP", qp, "JDIST_TIMEOUT", "60"));
                    if (ring) env.put("MLX_JACCL_RING", "1");
                    try (JacclGroup g = (JacclGroup) new JacclBackend().init(true, env).orElseThrow()) {
                        body.run(g, rank);
                    }
                    return null;
                });
            }
            for (Future<?> f : fs) f.get(seconds, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertThat(violations(so)).as("spec violations seen by the fake libibverbs").isEmpty();
    }

    void runGroup(Path dir, String matrix, int n, boolean ring, String qp) throws Throwable {
        runRanks(dir, matrix, n, ring, qp, 150, (g, rank) -> {
            assertThat(g.topology()).isEqualTo(ring ? JacclConfig.Topology.RING : JacclConfig.Topology.MESH);
            for (int count : new int[]{10, 200_001}) {
                float[] v = new float[count];
                for (int i = 0; i < count; i++) v[i] = rank + i % 5;
                Array out = Array.zeros(DType.FLOAT32, count);
                g.allReduce(Array.fromFloats(v, count), out, ReduceOp.SUM);
                float[] got = out.toFloatArray();
                for (int i = 0; i < count; i++) {
                    assertThat(got[i]).as("rank %d all_sum[%d] of %d", rank, i, count).isEqualTo(n * (n - 1) / 2f + n * (i % 5));
                }
                Array max = Array.zeros(DType.FLOAT32, count);
                g.allReduce(Array.fromFloats(v, count), max, ReduceOp.MAX);
                assertThat(max.toFloatArray()[count - 1]).isEqualTo(n - 1 + (count - 1) % 5);
            }
            Array gathered = Array.zeros(DType.INT32, n * 3000);
            int[] mine = new int[3000];
            java.util.Arrays.fill(mine, rank * 7);
            g.allGather(Array.fromInts(mine, 3000), gathered);
            int[] all = gathered.toIntArray();
            for (int q = 0; q < n; q++) assertThat(all[q * 3000 + 2999]).isEqualTo(q * 7);
            int[] chunks = new int[n * 40_000];
            for (int i = 0; i < chunks.length; i++) chunks[i] = i;
            Array part = Array.zeros(DType.INT32, 40_000);
            g.sumScatter(Array.fromInts(chunks, chunks.length), part);
            assertThat(part.toIntArray()[123]).isEqualTo(n * (rank * 40_000 + 123));
            int right = (rank + 1) % n, left = (rank - 1 + n) % n;
            Array msg = Array.fromInts(new int[]{rank, 42, 43}, 3);
            Array got = Array.zeros(DType.INT32, 3);
            if (rank % 2 == 0) {
                g.send(msg, right);
                g.recv(got, left);
            } else {
                g.recv(got, left);
                g.send(msg, right);
            }
            assertThat(got.toIntArray()).containsExactly(left, 42, 43);
        });
    }

    /**
     * The operations MLX lacks (docs/reference/collectives.md §13.9) through the binding: every value {@link
     * dev.jdist.CollectiveChecks} knows, each rank a JACCL group formed from MLX's variables as a user's would be, used
     * as a group of known jdist members (as with a job token).
     */
    void runPeerOperations(Path dir, String matrix, int n, boolean ring, String qp) throws Throwable {
        runRanks(dir, matrix, n, ring, qp, 250, (g, rank) -> {
            dev.jdist.CollectiveChecks.Options o = new dev.jdist.CollectiveChecks.Options(java.util.List.of(DType.values()),
                    java.util.List.of(DType.FLOAT32, DType.INT64), 1_200_000, true);
            assertThat(dev.jdist.CollectiveChecks.run(dev.jdist.CollectiveChecks.jdistGroup(g), ring ? o.neighboursOnly() : o))
                    .as("rank %d", rank).isEmpty();
        });
    }

    @Test
    @Timeout(300)
    void theOperationsMlxLacksOnAFiveRankMeshUc(@TempDir Path dir) throws Throwable {
        runPeerOperations(dir, fullMesh(5), 5, false, "uc");
    }

    @Test
    @Timeout(300)
    void theOperationsMlxLacksOnAFourRankRingTwoWiresRc(@TempDir Path dir) throws Throwable {
        String row0 = "[null,[\"fake0\",\"fake1\"],null,[\"fake2\",\"fake3\"]]";
        String row1 = "[[\"fake0\",\"fake1\"],null,[\"fake2\",\"fake3\"],null]";
        runPeerOperations(dir, "[" + row0 + "," + row1 + "," + row0 + "," + row1 + "]", 4, true, "rc");
    }

    @Test
    @Timeout(200)
    void threeRankMeshUc(@TempDir Path dir) throws Throwable {
        runGroup(dir, "[[null,\"fake1\",\"fake2\"],[\"fake0\",null,\"fake2\"],[\"fake0\",\"fake1\",null]]", 3, false, "uc");
    }

    @Test
    @Timeout(200)
    void twoRankMeshRc(@TempDir Path dir) throws Throwable {
        runGroup(dir, "[[null,\"fake1\"],[\"fake0\",null]]", 2, false, "rc");
    }

    @Test
    @Timeout(200)
    void fourRankRingTwoWiresRc(@TempDir Path dir) throws Throwable {
        String row0 = "[null,[\"fake0\",\"fake1\"],null,[\"fake2\",\"fake3\"]]";
        String row1 = "[[\"fake0\",\"fake1\"],null,[\"fake2\",\"fake3\"],null]";
        String row2 = "[null,[\"fake0\",\"fake1\"],null,[\"fake2\",\"fake3\"]]";
        String row3 = "[[\"fake0\",\"fake1\"],null,[\"fake2\",\"fake3\"],null]";
        runGroup(dir, "[" + row0 + "," + row1 + "," + row2 + "," + row3 + "]", 4, true, "rc");
    }

    @Test
    @Timeout(300)
    void eightRankMeshUc(@TempDir Path dir) throws Throwable {
        runGroup(dir, fullMesh(8), 8, false, "uc");
    }

    @Test
    @Timeout(200)
    void twoRankRingUsesDistinctLeftAndRightQueuePairs(@TempDir Path dir) throws Throwable {
        runGroup(dir, "[[null,\"fake0\"],[\"fake1\",null]]", 2, true, "uc");
    }

    @Test
    @Timeout(60)
    void jacclCheckReportsDevicesGidsAndTheRanksRow(@TempDir Path dir) throws Throwable {
        Path so = library(dir);
        Path file = dir.resolve("devices.json");
        Files.writeString(file, "[[null,\"fake1\",\"fake9\"],[\"fake0\",null,\"fake2\"],[\"fake0\",\"fake1\",null]]");
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        int code = JacclCheck.run(new String[]{file.toString()}, Map.of("JDIST_JACCL_LIB", so.toString(), "MLX_RANK", "0"),
                new java.io.PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).contains("devices: 4").contains("fake2: port 1 ACTIVE, lid 0, 4 GIDs, IPv4-mapped GID at index 2 (10.0.0.3)")
                .contains("mesh: valid").contains("rank 0 -> rank 1: fake1 present").contains("rank 0 -> rank 2: fake9 MISSING");
        assertThat(code).as(out).isEqualTo(1);
        bytes.reset();
        assertThat(JacclCheck.run(new String[0], Map.of("JDIST_JACCL_LIB", "libjdist-absent.so.0"),
                new java.io.PrintStream(bytes, true, StandardCharsets.UTF_8))).isEqualTo(2);
        assertThat(bytes.toString(StandardCharsets.UTF_8)).contains("libjdist-absent.so.0");
    }
}
