package dev.jdist.rendezvous;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.cluster.JobDiscovery;
import dev.jdist.ring.RingBackend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobTable;
import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Ranks as threads of one JVM (the multi-process tests are the {@code *IT}s): the store, the agreement check and the
 * ring formed from a rendezvous, with real sockets on loopback.
 */
class RendezvousInProcessTest {

    /** What one rank-thread produced: a value or the exception it raised. */
    record Outcome(Object value, Throwable error) {}

    interface RankBody {
        Object run(int rank) throws Exception;
    }

    static List<Outcome> runRanks(int n, RankBody body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<Object>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs.add(pool.submit(() -> body.run(rank)));
            }
            List<Outcome> out = new ArrayList<>();
            for (Future<Object> f : fs) {
                try {
                    out.add(new Outcome(f.get(90, TimeUnit.SECONDS), null));
                } catch (java.util.concurrent.ExecutionException e) {
                    out.add(new Outcome(null, e.getCause()));
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    static Map<String, String> torchrun(int rank, int size, int port, String... extra) {
        Map<String, String> env = new HashMap<>(Map.of("RANK", Integer.toString(rank), "WORLD_SIZE", Integer.toString(size),
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port), "JDIST_TIMEOUT", "30"));
        for (int i = 0; i < extra.length; i += 2) env.put(extra[i], extra[i + 1]);
        return env;
    }

    /** Meets through the store and forms the ring; returns rank:size:sum-of-ranks, or throws. */
    static Object ringRank(Map<String, String> env) {
        ClusterJob job = JobDiscovery.inspect(env).job().orElseThrow();
        StoreRendezvous rv = Rendezvous.open(job, env);
        try {
            GroupImpl g = new RingBackend().join(true, rv).orElseThrow();
            try (g) {
                Array in = Array.fromBytes(DType.INT32, java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                        .putInt(g.rank() + 1).array(), 1);
                Array out = Array.zeros(DType.INT32, g.size());
                g.allGather(in, out);
                List<Integer> got = new ArrayList<>();
                java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(out.toBytes()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                for (int q = 0; q < g.size(); q++) got.add(b.getInt());
                JobTable t = rv.table().orElseThrow();
                return g.rank() + ":" + g.size() + ":" + got + ":" + t.size() + ":" + t.rank(g.rank()).backend();
            }
        } finally {
            rv.close();
        }
    }

    static List<Outcome> ring(int n, IntFunction<Map<String, String>> env) throws Exception {
        return runRanks(n, r -> ringRank(env.apply(r)));
    }

    @Test
    @Timeout(120)
    void threeRanksFormARingFromTorchrunVariables() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(3, r -> torchrun(r, 3, port));
        for (int r = 0; r < 3; r++) {
            assertThat(out.get(r).error()).as("rank %d", r).isNull();
            assertThat(out.get(r).value()).isEqualTo(r + ":3:[1, 2, 3]:3:ring");
        }
    }

    @Test
    @Timeout(120)
    void twoConnectionsPerNeighbourAndAJobToken() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(3, r -> torchrun(r, 3, port, "JDIST_RING_CONNECTIONS", "2", "JDIST_JOB_TOKEN", "s3cret"));
        for (int r = 0; r < 3; r++) {
            assertThat(out.get(r).error()).as("rank %d", r).isNull();
            assertThat(out.get(r).value()).isEqualTo(r + ":3:[1, 2, 3]:3:ring");
        }
    }

    @Test
    @Timeout(120)
    void aMissingRankIsNamedOnEveryRankThatCame() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(2, r -> torchrun(r, 3, port, "JDIST_RENDEZVOUS_TIMEOUT", "2"));
        for (Outcome o : out) {
            assertThat(o.error()).isInstanceOf(DeadlineExceededException.class)
                    .hasMessageContaining("expected 3 ranks; 2 joined within 2 s; missing rank 2 (rank 2: never connected)");
        }
    }

    @Test
    @Timeout(120)
    void aRankStartedWithAnotherWorldSizeFailsEveryRankWithOneError() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(3, r -> torchrun(r, r == 1 ? 4 : 3, port));
        String first = null;
        for (Outcome o : out) {
            assertThat(o.error()).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("rank 1 (").hasMessageContaining("was started with WORLD_SIZE=4, the others with 3");
            if (first == null) first = o.error().getMessage();
            assertThat(o.error().getMessage()).isEqualTo(first);
        }
    }

    @Test
    @Timeout(120)
    void aRankOutsideItsOwnWorldSizeStillTellsTheOthers() throws Exception {
        int port = FreePorts.one();
        // rank 3 of 4 started with WORLD_SIZE=2: "rank 3 was started with WORLD_SIZE=2, the others with 4"
        List<Outcome> out = ring(4, r -> torchrun(r, r == 3 ? 2 : 4, port));
        for (Outcome o : out) {
            assertThat(o.error()).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("was started with WORLD_SIZE=2, the others with 4");
        }
    }

    @Test
    @Timeout(120)
    void differentRingSettingsAreNamed() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(3, r -> torchrun(r, 3, port, "JDIST_TRANSPORT", r == 2 ? "shm" : "tcp"));
        for (Outcome o : out) {
            assertThat(o.error()).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("was started with JDIST_TRANSPORT=shm, the others with tcp");
        }
    }

    @Test
    @Timeout(120)
    void aRankWithAnotherTokenIsRefusedAndNamedByTheOthers() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(3, r -> torchrun(r, 3, port, "JDIST_JOB_TOKEN", r == 2 ? "other" : "s3cret",
                "JDIST_RENDEZVOUS_TIMEOUT", "4"));
        assertThat(out.get(2).error()).isInstanceOf(ConfigException.class).hasMessageContaining("different job token");
        for (int r = 0; r < 2; r++) {
            assertThat(out.get(r).error()).as("rank %d", r).isInstanceOf(DeadlineExceededException.class)
                    .hasMessageContaining("missing rank 2 (rank 2: at ")
                    .hasMessageContaining(" s, a connection from 127.0.0.1 claiming rank 2 left after the store's token proof: it "
                            + "has a different JDIST_JOB_TOKEN");
        }
    }

    @Test
    @Timeout(120)
    void aRankWithoutTheTokenIsTold() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = ring(2, r -> r == 0 ? torchrun(0, 2, port, "JDIST_JOB_TOKEN", "s3cret", "JDIST_RENDEZVOUS_TIMEOUT", "3")
                : torchrun(1, 2, port, "JDIST_RENDEZVOUS_TIMEOUT", "3"));
        assertThat(out.get(1).error()).isInstanceOf(ConfigException.class)
                .hasMessageContaining("requires the job token, but this process has no JDIST_JOB_TOKEN");
        assertThat(out.get(0).error()).isInstanceOf(DeadlineExceededException.class)
                .hasMessageContaining("has no JDIST_JOB_TOKEN, but this job has one");
    }

    @Test
    @Timeout(120)
    void connectFormsAFreshRingFromTheCallersAllGather() throws Exception {
        InMemoryAllGather exchange = new InMemoryAllGather(3);
        Map<String, String> env = Map.of("JDIST_IFNAME", "lo", "JDIST_TIMEOUT", "30");
        List<Outcome> out = runRanks(3, r -> {
            try (Group g = Distributed.connect(r, 3, exchange, "ring", env)) {
                Array sum = g.allSum(Array.full(DType.FLOAT32, r + 1.0, 4));
                JobTable t = g.jobTable().orElseThrow();
                return g.rank() + ":" + g.size() + ":" + g.backend() + ":" + sum.getDouble(0) + ":" + t.allJdist() + ":" + t.oneHost();
            }
        });
        for (int r = 0; r < 3; r++) {
            assertThat(out.get(r).error()).as("rank %d", r).isNull();
            assertThat(out.get(r).value()).isEqualTo(r + ":3:ring:6.0:true:true");
        }
    }

    @Test
    @Timeout(120)
    void connectWithTwoProcessesClaimingOneRankFailsEverywhere() throws Exception {
        InMemoryAllGather exchange = new InMemoryAllGather(3);
        Map<String, String> env = Map.of("JDIST_IFNAME", "lo");
        List<Outcome> out = runRanks(3, r -> Distributed.connect(r == 2 ? 1 : r, 3, exchange.slot(r), "ring", env));
        for (Outcome o : out) {
            assertThat(o.error()).isInstanceOf(ConfigException.class).hasMessageContaining("says it is rank 1, in place");
        }
    }

    @Test
    @Timeout(120)
    void garbageInTheStoreIsNamedNotCrashedOn() throws Exception {
        int port = FreePorts.one();
        List<Outcome> out = runRanks(2, r -> {
            if (r == 0) return ringRank(torchrun(0, 2, port, "JDIST_RENDEZVOUS_TIMEOUT", "5"));
            // a stranger (no token in this job) writes junk where rank 1's record belongs
            try (StoreClient c = StoreClient.connect(new java.net.InetSocketAddress("127.0.0.1", port), "test", null, 1,
                    System.nanoTime() + 20_000_000_000L, java.time.Duration.ofSeconds(20))) {
                c.set("jdist/rank/1", "{\"rank\": \"one\"".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            return "stranger done";
        });
        assertThat(out.get(1).value()).isEqualTo("stranger done");
        assertThat(out.get(0).error()).isInstanceOf(ConfigException.class)
                .hasMessageContaining("the rendezvous store holds records that are not a jdist rank's (jdist/rank/1");
    }
}
