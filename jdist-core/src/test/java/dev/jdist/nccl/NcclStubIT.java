package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.Distributed;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.TestGroups;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.RankThreads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static dev.jdist.nccl.NcclTestSupport.rankEnv;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The nccl backend's whole call sequence — library discovery, device selection, the TCP bootstrap,
 * ncclCommInitRank, staging, every op and dtype, split, device arrays, the error paths — against the
 * stand-in libnccl/libcudart built from src/test/c. Ranks are threads of this JVM; the stub lets
 * them meet in one communicator.
 */
@Timeout(120)
class NcclStubIT {

    static final DType[] SUPPORTED = {DType.INT8, DType.UINT8, DType.INT32, DType.UINT32, DType.INT64, DType.UINT64,
        DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16};

    NcclStubLibraries stubs;
    int cudaBaseline;
    int ncclBaseline;

    @BeforeEach
    void stubs() throws Exception {
        stubs = NcclStubLibraries.get();
        stubs.reset();
        cudaBaseline = stubs.cudaLive();
        ncclBaseline = stubs.ncclLive();
    }

    @AfterEach
    void noLeaks() {
        stubs.reset();
        Distributed.reset();
        assertThat(stubs.ncclLive()).as("communicators left open").isEqualTo(ncclBaseline);
        assertThat(stubs.cudaLive()).as("device allocations and streams left").isEqualTo(cudaBaseline);
    }

    /** Forms an {@code n}-rank nccl world (one thread per rank) and wraps each rank's group. */
    List<Group> world(int n) throws Exception {
        int port = FreePorts.one();
        return RankThreads.run(n, 60, r -> {
            GroupImpl impl = new NcclBackend(Map.of()).init(true, rankEnv(r, n, port, 20_000, stubs.env())).orElseThrow();
            return TestGroups.wrap(impl);
        });
    }

    static void closeAll(List<Group> groups) {
        groups.forEach(Group::close);
    }

    static double value(int rank, int i) {
        return (rank + 1) + i;
    }

    static Array input(DType dt, int rank, int... shape) {
        int e = 1;
        for (int d : shape) e *= d;
        double[] v = new double[e];
        for (int i = 0; i < e; i++) v[i] = value(rank, i);
        return Array.fromDoubles(dt, v, shape);
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "FLOAT32",
        "FLOAT64", "BFLOAT16"})
    void everyOpOnHostArraysIsStagedThroughNcclForEveryDtypeNcclSupports(DType dt) throws Exception {
        int n = 3;
        List<Group> groups = world(n);
        try {
            RankThreads.run(n, 60, r -> {
                Group g = groups.get(r);
                assertThat(g.rank()).isEqualTo(r);
                assertThat(g.size()).isEqualTo(n);
                assertThat(g.backend()).isEqualTo("nccl");
                Array x = input(dt, r, 2, 3);
                Array sum = g.allSum(x);
                Array max = g.allMax(x);
                Array min = g.allMin(x);
                assertThat(sum.dtype()).isEqualTo(dt);
                assertThat(sum.shape()).containsExactly(2, 3);
                for (int i = 0; i < 6; i++) {
                    assertThat(sum.getDouble(i)).as("sum[%d]", i).isEqualTo(6 + 3.0 * i);
                    assertThat(max.getDouble(i)).as("max[%d]", i).isEqualTo(value(n - 1, i));
                    assertThat(min.getDouble(i)).as("min[%d]", i).isEqualTo(value(0, i));
                }
                Array gathered = g.allGather(x);
                assertThat(gathered.shape()).containsExactly(6, 3);
                for (int q = 0; q < n; q++) {
                    for (int i = 0; i < 6; i++) {
                        assertThat(gathered.getDouble(q * 6 + i)).as("gather block %d [%d]", q, i).isEqualTo(value(q, i));
                    }
                }
                Array scattered = g.sumScatter(input(dt, r, 6));
                assertThat(scattered.shape()).containsExactly(2);
                for (int i = 0; i < 2; i++) {
                    assertThat(scattered.getDouble(i)).isEqualTo(6 + 3.0 * (2 * r + i));
                }
                // ncclBroadcast from a root other than 0
                Array b = g.broadcast(input(dt, r, 2, 3), n - 1);
                for (int i = 0; i < 6; i++) assertThat(b.getDouble(i)).as("broadcast[%d]", i).isEqualTo(value(n - 1, i));
                // async variants go through the same staging, in issue order
                Array asyncSum = g.allSumAsync(x).join();
                assertThat(asyncSum.toDoubleArray()).containsExactly(sum.toDoubleArray());
                return null;
            });
        } finally {
            closeAll(groups);
        }
    }

    @Test
    void stagingBuffersGrowForLargerArraysAndEmptyArraysNeedNoCall() throws Exception {
        int n = 2;
        List<Group> groups = world(n);
        try {
            RankThreads.run(n, 60, r -> {
                Group g = groups.get(r);
                for (int e : new int[] {1, 10, 5000, 70_000, 3}) {
                    Array s = g.allSum(Array.full(DType.FLOAT32, r + 1, e));
                    assertThat(s.size()).isEqualTo(e);
                    assertThat(s.getDouble(e - 1)).isEqualTo(3.0);
                }
                assertThat(g.allSum(Array.zeros(DType.FLOAT32, 0)).size()).isZero();
                assertThat(g.allGather(Array.zeros(DType.INT32, 0, 4)).shape()).containsExactly(0, 4);
                Array scalar = g.allGather(Array.full(DType.INT64, 7 + r));
                assertThat(scalar.shape()).containsExactly(2);
                assertThat(scalar.toLongArray()).containsExactly(7, 8);
                return null;
            });
        } finally {
            closeAll(groups);
        }
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"BOOL", "INT16", "UINT16", "COMPLEX64"})
    void dtypesNcclLacksAreAnArgumentErrorForEveryOp(DType dt) throws Exception {
        int n = 2;
        List<Group> groups = world(n);
        try {
            RankThreads.run(n, 60, r -> {
                Group g = groups.get(r);
                Array x = Array.zeros(dt, 4);
                for (Runnable op : List.<Runnable>of(() -> g.allSum(x), () -> g.allMax(x), () -> g.allMin(x),
                        () -> g.allGather(x), () -> g.sumScatter(x))) {
                    assertThatThrownBy(op::run).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining(dt.mlxName()).hasMessageContaining("nccl");
                }
                NcclGroup ng = NcclGroup.of(g);
                try (DeviceArray d = ng.allocate(dt, 4)) {
                    assertThatThrownBy(() -> ng.allSum(d)).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining(dt.mlxName());
                    assertThatThrownBy(() -> ng.allGather(d)).isInstanceOf(IllegalArgumentException.class);
                    assertThatThrownBy(() -> ng.sumScatter(d)).isInstanceOf(IllegalArgumentException.class);
                }
                // the group still works afterwards
                assertThat(g.allSum(Array.ones(DType.FLOAT32, 2)).toFloatArray()).containsExactly(2f, 2f);
                return null;
            });
        } finally {
            closeAll(groups);
        }
    }

    /**
     * The operations MLX lacks over NCCL (broadcast, grouped ncclSend/ncclRecv for any-peer send/recv, batches,
     * all_to_all(v), gather, scatter): every value CollectiveChecks knows, on every rank, for every dtype.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0} ranks")
    @org.junit.jupiter.params.provider.ValueSource(ints = {2, 3, 5})
    void theOperationsMlxLacksGiveTheDocumentedBytesOnEveryRank(int n) throws Exception {
        List<Group> groups = world(n);
        try {
            dev.jdist.CollectiveChecks.Options o = new dev.jdist.CollectiveChecks.Options(List.of(DType.values()),
                    List.of(DType.FLOAT32), 200_000, true);   // bytes move as ncclUint8: every dtype
            List<List<String>> wrong = RankThreads.run(n, 240, r -> dev.jdist.CollectiveChecks.run(groups.get(r), o));
            for (int r = 0; r < n; r++) assertThat(wrong.get(r)).as("rank %d", r).isEmpty();
        } finally {
            closeAll(groups);
        }
    }

    @Test
    void splitGroupsByColourAndOrdersByKeyThroughNcclCommSplit() throws Exception {
        int n = 4;
        List<Group> groups = world(n);
        try {
            List<long[]> gathered = RankThreads.run(n, 60, r -> {
                Group g = groups.get(r);
                try (Group child = g.split(r % 2, 10 - r)) {     // higher parent rank, smaller key: order reversed
                    assertThat(child.size()).isEqualTo(2);
                    assertThat(child.backend()).isEqualTo("nccl");
                    long[] members = child.allGather(Array.of((long) r)).toLongArray();
                    // default key: parent order
                    try (Group byRank = g.split(0)) {
                        assertThat(byRank.size()).isEqualTo(4);
                        assertThat(byRank.rank()).isEqualTo(r);
                        assertThat(byRank.allSum(Array.of(1, 2)).toIntArray()).containsExactly(4, 8);
                    }
                    return members;
                }
            });
            assertThat(gathered.get(0)).containsExactly(2, 0);
            assertThat(gathered.get(2)).containsExactly(2, 0);
            assertThat(gathered.get(1)).containsExactly(3, 1);
            assertThat(gathered.get(3)).containsExactly(3, 1);
            assertThat(stubs.lastSplitConfigNull()).as("split passes a NULL config (inherit the parent's)").isEqualTo(1);
            assertThatThrownBy(() -> groups.get(0).split(-1)).isInstanceOf(IllegalArgumentException.class);
        } finally {
            closeAll(groups);
        }
    }

    @Test
    void deviceArraysRunCollectivesOnDevicePointersWithoutStaging() throws Exception {
        int n = 2;
        List<Group> groups = world(n);
        try {
            RankThreads.run(n, 60, r -> {
                NcclGroup ng = NcclGroup.of(groups.get(r));
                Array host = input(DType.FLOAT32, r, 4);
                try (DeviceArray d = ng.toDevice(host);
                     DeviceArray sum = ng.allSum(d);
                     DeviceArray max = ng.allMax(d);
                     DeviceArray min = ng.allMin(d);
                     DeviceArray all = ng.allGather(d);
                     DeviceArray part = ng.sumScatter(d)) {
                    assertThat(d.device()).isEqualTo(0);
                    assertThat(d.toHost().toFloatArray()).containsExactly(host.toFloatArray());
                    assertThat(sum.toHost().toFloatArray()).containsExactly(3, 5, 7, 9);
                    assertThat(max.toHost().toFloatArray()).containsExactly(2, 3, 4, 5);
                    assertThat(min.toHost().toFloatArray()).containsExactly(1, 2, 3, 4);
                    assertThat(all.shape()).containsExactly(8);
                    assertThat(all.toHost().toFloatArray()).containsExactly(1, 2, 3, 4, 2, 3, 4, 5);
                    assertThat(part.shape()).containsExactly(2);
                    assertThat(part.toHost().toFloatArray()).containsExactly(r == 0 ? new float[] {3, 5} : new float[] {7, 9});
                    ng.allReduce(d, d, ReduceOp.SUM);                       // in place
                    assertThat(d.toHost().toFloatArray()).containsExactly(3, 5, 7, 9);
                    Array back = Array.zeros(DType.FLOAT32, 2, 2);
                    sum.copyTo(back);
                    assertThat(back.toFloatArray()).containsExactly(3, 5, 7, 9);
                    assertThatThrownBy(() -> ng.allReduce(d, all, ReduceOp.SUM)).isInstanceOf(IllegalArgumentException.class);
                    assertThatThrownBy(() -> ng.sumScatter(ng.toDevice(Array.zeros(DType.FLOAT32, 3))))
                            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[3]");
                    assertThatThrownBy(() -> d.copyFrom(Array.zeros(DType.INT32, 4)))
                            .isInstanceOf(IllegalArgumentException.class);
                }
                DeviceArray closed = ng.allocate(DType.INT32, 2);
                closed.close();
                closed.close();
                assertThatThrownBy(() -> ng.allSum(closed)).isInstanceOf(IllegalStateException.class);
                return null;
            });
            System.gc(); // the sumScatter input above was never closed; the cleaner frees it
            for (int i = 0; i < 50 && stubs.cudaLive() > cudaBaseline + 2 * 4; i++) Thread.sleep(20);
        } finally {
            closeAll(groups);
        }
        for (int i = 0; i < 100 && stubs.cudaLive() != cudaBaseline; i++) {
            System.gc();
            Thread.sleep(20);
        }
    }

    @Test
    void heapBackedArraysAreCopiedThroughNativeMemory() throws Exception {
        int n = 2;
        List<Group> groups = world(n);
        try {
            RankThreads.run(n, 60, r -> {
                float[] values = {r + 1f, 10f * (r + 1)};
                Array heap = Array.wrap(java.lang.foreign.MemorySegment.ofArray(values), DType.FLOAT32, 2);
                float[] outValues = new float[2];
                Array heapOut = Array.wrap(java.lang.foreign.MemorySegment.ofArray(outValues), DType.FLOAT32, 2);
                NcclGroup.of(groups.get(r)).allReduce(heap, heapOut, ReduceOp.SUM);
                assertThat(outValues).containsExactly(3f, 30f);
                NcclGroup ng = NcclGroup.of(groups.get(r));
                try (DeviceArray d = ng.toDevice(heap)) {
                    float[] back = new float[2];
                    d.copyTo(Array.wrap(java.lang.foreign.MemorySegment.ofArray(back), DType.FLOAT32, 2));
                    assertThat(back).containsExactly(values);
                }
                return null;
            });
        } finally {
            closeAll(groups);
        }
    }

    @Test
    void ranksPickDeviceRankModDeviceCount() throws Exception {
        stubs.setDevices(2);
        List<Group> groups = world(3);
        try {
            for (int r = 0; r < 3; r++) assertThat(NcclGroup.of(groups.get(r)).device()).isEqualTo(r % 2);
            RankThreads.run(3, 60, r -> groups.get(r).allSum(Array.of(1f)));
        } finally {
            closeAll(groups);
        }
    }

    @Test
    void distributedInitFindsTheBackendThroughServiceLoaderAndAOneRankGroupStillCallsNcclOnDeviceArrays() throws Exception {
        Map<String, String> env = rankEnv(0, 1, FreePorts.one(), 5_000, stubs.env());
        Group g = Distributed.init(true, "nccl", env);
        assertThat(g.backend()).isEqualTo("nccl");
        assertThat(g.size()).isEqualTo(1);
        Array x = Array.of(1f, 2f);
        assertThat(g.allSum(x)).isSameAs(x);                          // docs/reference/collectives.md §2.5: 1-rank groups return their input
        NcclGroup ng = NcclGroup.of(g);
        try (DeviceArray d = ng.toDevice(x); DeviceArray s = ng.allSum(d); DeviceArray all = ng.allGather(d)) {
            assertThat(s.toHost().toFloatArray()).containsExactly(1f, 2f);
            assertThat(all.shape()).containsExactly(2);
        }
        assertThatThrownBy(() -> NcclGroup.of(Distributed.init(false, "ring", Map.of())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not an nccl group");
    }

    // ------------------------------------------------------------------ error paths

    Group oneRank() throws Exception {
        return world(1).get(0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter"})
    void ncclFailuresBecomeExceptionsCarryingNcclsErrorStringAndTheCommunicatorIsAborted(String fn) throws Exception {
        int abortsBefore = stubs.aborts();
        Array x = Array.of(1f, 2f);
        Group g = oneRank();
        NcclGroup ng = NcclGroup.of(g);
        try (DeviceArray d = ng.toDevice(x)) {
            stubs.failNccl(fn);
            Runnable op = switch (fn) {
                case "ncclAllReduce" -> () -> ng.allSum(d).close();
                case "ncclAllGather" -> () -> ng.allGather(d).close();
                default -> () -> ng.sumScatter(d).close();
            };
            assertThatThrownBy(op::run).isInstanceOf(DistributedException.class)
                    .hasMessageContaining(fn).hasMessageContaining("invalid usage")
                    .hasMessageContaining("injected failure in " + fn).hasMessageContaining("rank 0 of 1");
            // the communicator is aborted at once; the group says so from then on
            assertThat(stubs.aborts()).isEqualTo(abortsBefore + 1);
            assertThatThrownBy(op::run).isInstanceOf(DistributedException.class)
                    .hasMessageContaining("was aborted after an earlier failure").hasMessageContaining("invalid usage");
        } finally {
            stubs.failNccl("");
            g.close();                                   // already aborted: nothing more to end
        }
        // host arrays (staged) report the same way
        Group g2 = oneRank();
        NcclGroup ng2 = NcclGroup.of(g2);
        try {
            stubs.failNccl(fn);
            Array out = Array.zerosLike(x);
            assertThatThrownBy(() -> {
                switch (fn) {
                    case "ncclAllReduce" -> ng2.allReduce(x, out, ReduceOp.MAX);
                    case "ncclAllGather" -> ng2.allGather(x, out);
                    default -> ng2.sumScatter(x, out);
                }
            }).isInstanceOf(DistributedException.class).hasMessageContaining("invalid usage")
                    .satisfies(e -> assertThat(((DistributedException) e).operation()).isPresent());
        } finally {
            stubs.failNccl("");
            g2.close();
        }
        assertThat(stubs.aborts()).as("each failed communicator is aborted once, not destroyed").isEqualTo(abortsBefore + 2);
    }

    @Test
    void communicatorsAreCreatedNonBlockingAndFinalizedOnClose() throws Exception {
        int finalizesBefore = stubs.finalizes();
        List<Group> groups = world(2);
        assertThat(stubs.lastInitBlocking()).as("ncclCommInitRankConfig with config.blocking").isZero();
        try {
            RankThreads.run(2, 60, r -> {
                try (Group child = groups.get(r).split(0)) {        // a non-blocking parent's split: ready when polled
                    assertThat(child.allSum(Array.of(1f + r)).toFloatArray()).containsExactly(3f);
                }
                return null;
            });
        } finally {
            closeAll(groups);
        }
        assertThat(stubs.finalizes() - finalizesBefore).as("ncclCommFinalize before ncclCommDestroy").isEqualTo(4);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter"})
    void aCollectiveThatNeverCompletesEndsInAbortAndADeadlineExceededNamingRankOperationAndDeadline(String fn)
            throws Exception {
        Map<String, String> env = new java.util.HashMap<>(stubs.env());
        env.put("JDIST_TIMEOUT", "700ms");
        Group g = Distributed.init(true, "nccl", rankEnv(0, 1, FreePorts.one(), 5_000, env));
        NcclGroup ng = NcclGroup.of(g);
        int abortsBefore = stubs.aborts();
        try (DeviceArray d = ng.toDevice(Array.of(1f, 2f))) {
            stubs.hangNccl(fn);
            long t0 = System.nanoTime();
            Runnable op = switch (fn) {
                case "ncclAllReduce" -> () -> ng.allSum(d).close();
                case "ncclAllGather" -> () -> ng.allGather(d).close();
                default -> () -> ng.sumScatter(d).close();
            };
            String name = switch (fn) {
                case "ncclAllReduce" -> "all_sum";
                case "ncclAllGather" -> "all_gather";
                default -> "sum_scatter";
            };
            assertThatThrownBy(op::run).isInstanceOfSatisfying(DeadlineExceededException.class, e -> {
                assertThat(e.getMessage()).contains("nccl rank 0 of 1").contains(name + " float32[2]")
                        .contains("did not complete within 0.700 s (JDIST_TIMEOUT)").contains("ncclCommAbort");
                assertThat(e.rank()).hasValue(0);
                assertThat(e.operation()).hasValue(name + " float32[2] (device arrays)");
                assertThat(e.deadline()).hasValue(java.time.Duration.ofMillis(700));
            });
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertThat(seconds).as("failed after the deadline, not long after").isBetween(0.7, 10.0);
            assertThat(stubs.aborts()).isEqualTo(abortsBefore + 1);
            // the group is unusable from then on (host arrays too; GroupImpl, as a 1-rank Group calls no backend)
            assertThatThrownBy(() -> ng.allReduce(Array.of(1f), Array.of(0f), ReduceOp.SUM))
                    .isInstanceOf(DistributedException.class).hasMessageContaining("was aborted after an earlier failure");
        } finally {
            stubs.hangNccl("");
            long t0 = System.nanoTime();
            g.close();
            assertThat((System.nanoTime() - t0) / 1e9).as("close after a failure returns within seconds").isLessThan(5);
        }
    }

    @Test
    void anAsynchronousNcclErrorIsAPeerLostAndAbortsTheCommunicator() throws Exception {
        Group g = oneRank();
        int abortsBefore = stubs.aborts();
        try {
            stubs.asyncError(6);                                    // ncclRemoteError
            Array out = Array.zeros(DType.FLOAT32, 2);
            assertThatThrownBy(() -> NcclGroup.of(g).allReduce(Array.of(1f, 2f), out, ReduceOp.SUM))
                    .isInstanceOfSatisfying(PeerLostException.class, e -> {
                assertThat(e.getMessage()).contains("nccl rank 0 of 1").contains("all_sum float32[2]")
                        .contains("remote process exited").contains("injected asynchronous error 6");
                assertThat(e.rank()).hasValue(0);
                assertThat(e.operation()).hasValue("all_sum float32[2]");
            });
            assertThat(stubs.aborts()).isEqualTo(abortsBefore + 1);
        } finally {
            stubs.asyncError(0);
            g.close();
        }
    }

    @Test
    void aRankThatFetchesTheIdButNeverJoinsEndsCreationInAbortWithinTheDeadline() throws Exception {
        int port = FreePorts.one();
        Map<String, String> env = new java.util.HashMap<>(stubs.env());
        env.put("JDIST_TIMEOUT", "1s");
        int abortsBefore = stubs.aborts();
        // "rank 1": takes the unique id from rank 0, then never calls ncclCommInitRankConfig
        Thread rank1 = Thread.ofPlatform().daemon().start(() ->
                NcclBootstrap.fetch(NcclConfig.fromEnv(rankEnv(1, 2, port, 20_000, env), true).orElseThrow()));
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> new NcclBackend(Map.of()).init(true, rankEnv(0, 2, port, 20_000, env)))
                .isInstanceOfSatisfying(DeadlineExceededException.class, e -> {
                    assertThat(e.getMessage()).contains("nccl rank 0 of 2").contains("creating the communicator")
                            .contains("did not complete within 1 s (JDIST_TIMEOUT)").contains("ncclCommAbort");
                    assertThat(e.operation()).hasValue("init");
                    assertThat(e.deadline()).hasValue(java.time.Duration.ofSeconds(1));
                });
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(15);
        assertThat(stubs.aborts()).isEqualTo(abortsBefore + 1);
        rank1.join(10_000);
    }

    @Test
    void cudaFailuresCarryCudasErrorString() throws Exception {
        Group g = oneRank();
        NcclGroup ng = NcclGroup.of(g);
        try {
            stubs.failCuda("cudaMalloc");
            assertThatThrownBy(() -> ng.toDevice(Array.of(1f))).isInstanceOf(DistributedException.class)
                    .hasMessageContaining("cudaMalloc").hasMessageContaining("out of memory");
            stubs.failCuda("cudaMemcpyAsync");
            assertThatThrownBy(() -> ng.allReduce(Array.of(1f), Array.of(0f), ReduceOp.SUM))
                    .isInstanceOf(DistributedException.class)
                    .hasMessageContaining("cudaMemcpyAsync").hasMessageContaining("invalid argument");
            stubs.failCuda("");
            Array out = Array.of(0f);
            ng.allReduce(Array.of(5f), out, ReduceOp.SUM);
            assertThat(out.toFloatArray()).containsExactly(5f);
            // A failure while waiting for a queued collective leaves it unknown: the communicator is aborted.
            int abortsBefore = stubs.aborts();
            stubs.failCuda("cudaStreamQuery");
            assertThatThrownBy(() -> ng.allReduce(Array.of(1f), Array.of(0f), ReduceOp.SUM))
                    .isInstanceOf(DistributedException.class).hasMessageContaining("cudaStreamQuery");
            stubs.failCuda("");
            assertThat(stubs.aborts()).isEqualTo(abortsBefore + 1);
            assertThatThrownBy(() -> ng.allReduce(Array.of(1f), Array.of(0f), ReduceOp.SUM))
                    .isInstanceOf(DistributedException.class).hasMessageContaining("was aborted after an earlier failure");
        } finally {
            g.close();
        }
    }

    @Test
    void initFailuresAreExceptionsNamingTheRankNeverAnExit() throws Exception {
        stubs.failNccl("ncclCommInitRankConfig");
        Map<String, String> env = rankEnv(0, 1, FreePorts.one(), 5_000, stubs.env());
        assertThatThrownBy(() -> new NcclBackend(Map.of()).init(false, env))
                .isInstanceOf(DistributedException.class)
                .hasMessageContaining("nccl rank 0 of 1").hasMessageContaining("ncclCommInitRankConfig")
                .hasMessageContaining("invalid usage");
        stubs.failNccl("ncclGetUniqueId");
        Map<String, String> env2 = rankEnv(0, 1, FreePorts.one(), 5_000, stubs.env());
        assertThatThrownBy(() -> new NcclBackend(Map.of()).init(true, env2))
                .isInstanceOf(DistributedException.class).hasMessageContaining("ncclGetUniqueId");
        stubs.failNccl("ncclCommSplit");
        Group g = oneRank();
        try {
            assertThatThrownBy(() -> g.split(0)).isInstanceOf(DistributedException.class)
                    .hasMessageContaining("ncclCommSplit");
        } finally {
            stubs.failNccl("");
            g.close();
        }
    }

    @Test
    void theRealCudaRuntimeWhereThisMachineHasOneAnswersThroughTheBinding() throws Exception {
        // libnccl: the stub; libcudart: the default search (CUDA 12/13 sonames, /usr/local/cuda/lib64)
        NcclBackend b = new NcclBackend(Map.of("JDIST_NCCL_LIBRARY", stubs.nccl.toString()));
        String reason = b.unavailableReason().orElse("");
        System.out.println("[NcclStubIT] real libcudart probe: " + (reason.isEmpty() ? "a CUDA device is usable" : reason));
        if (reason.startsWith("could not load libcudart")) {
            assertThat(reason).contains("libcudart.so.13").contains("libcudart.so.12").contains("JDIST_CUDART_LIBRARY");
        } else if (!reason.isEmpty()) {
            // the real runtime loaded, every symbol bound, and cudaGetDeviceCount's error came back with CUDA's text
            assertThat(reason).startsWith("cudaGetDeviceCount failed: ").contains("(cudaError ").contains("libcudart");
            assertThat(reason).doesNotContain("unknown CUDA error");
        }
    }

    @Test
    void noDeviceMeansUnavailableWithCudasReasonAndNonStrictInitGivesNothing() throws Exception {
        stubs.failCuda("cudaGetDeviceCount");
        NcclBackend b = new NcclBackend(stubs.env());
        assertThat(b.isAvailable()).isFalse();
        assertThat(b.unavailableReason()).get().asString().contains("no CUDA-capable device");
        Map<String, String> env = rankEnv(0, 1, FreePorts.one(), 5_000, stubs.env());
        assertThat(new NcclBackend(Map.of()).init(false, env)).isEmpty();
        assertThatThrownBy(() -> new NcclBackend(Map.of()).init(true, env)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("no CUDA-capable device").hasMessageContaining("MLX_RANK=0");
        stubs.failCuda("");
        assertThat(new NcclBackend(stubs.env()).isAvailable()).isTrue();
    }
}
