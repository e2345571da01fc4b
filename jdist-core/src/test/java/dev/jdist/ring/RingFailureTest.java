package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Set-up failures, operation deadlines, lost peers and the token handshake, in one JVM over loopback. */
@Timeout(60)
class RingFailureTest {

    @TempDir
    Path dir;

    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable c : toClose) c.close();
        pool.shutdownNow();
    }

    private static String[] addresses(Path hf) throws Exception {
        return java.util.regex.Pattern.compile("\"([^\"]+)\"").matcher(Files.readString(hf)).results()
                .map(m -> m.group(1)).toArray(String[]::new);
    }

    private static InetSocketAddress at(String text) {
        int c = text.indexOf(':');
        return new InetSocketAddress(text.substring(0, c), Integer.parseInt(text.substring(c + 1)));
    }

    private GroupImpl init(int rank, Path hf, String timeout, Map<String, String> extra) {
        Map<String, String> env = RingTestSupport.env(rank, hf, timeout);
        env.putAll(extra);
        GroupImpl g = new RingBackend().init(true, env).orElseThrow();
        toClose.add(g);
        return g;
    }

    @Test
    void aPeerThatNeverStartsIsAConnectErrorNamingItAfterTheDeadline() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 2);
        String[] a = addresses(hf);
        assertThatThrownBy(() -> init(0, hf, "1.5", Map.of()))
                .isInstanceOf(ConnectFailedException.class)
                .hasMessageContaining("rank 0").hasMessageContaining("rank 1")
                .hasMessageContaining(a[2]).hasMessageContaining(a[3]).hasMessageContaining("attempt")
                .hasMessageContaining("JDIST_TIMEOUT");
    }

    @Test
    void aLeftNeighbourThatNeverConnectsIsATimeoutNamingIt() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 3, 1);
        String[] a = addresses(hf);
        // rank 1 "exists" (something accepts on its address) but rank 2 never connects to rank 0
        ServerSocket fakeRank1 = new ServerSocket();
        fakeRank1.bind(at(a[1]));
        toClose.add(fakeRank1);
        assertThatThrownBy(() -> init(0, hf, "1", Map.of()))
                .isInstanceOf(DeadlineExceededException.class)
                .hasMessageContaining("rank 0").hasMessageContaining("rank 2").hasMessageContaining(a[0]);
    }

    @Test
    void aPortAlreadyTakenIsAConfigErrorNamingTheAddress() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        String[] a = addresses(hf);
        ServerSocket squatter = new ServerSocket();
        squatter.bind(at(a[0]));
        toClose.add(squatter);
        long start = System.nanoTime();
        assertThatThrownBy(() -> init(0, hf, "20", Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining(a[0]).hasMessageContaining("in use")
                .hasMessageContaining("MLX_RANK");
        assertThat(System.nanoTime() - start).as("fails at once, not after the deadline").isLessThan(TimeUnit.SECONDS.toNanos(15));
    }

    /** A 2-rank ring whose rank 1 is played by raw sockets. */
    private record RawPeer(Socket toRank0, Socket fromRank0) implements AutoCloseable {
        @Override
        public void close() throws Exception {
            toRank0.close();
            fromRank0.close();
        }
    }

    private RawPeer rawRank1(String[] a) throws Exception {
        ServerSocket l = new ServerSocket();
        l.bind(at(a[1]));
        l.setSoTimeout(20_000);
        Future<Socket> out = pool.submit(() -> {
            for (int i = 0; i < 400; i++) {
                try {
                    return new Socket(at(a[0]).getAddress(), at(a[0]).getPort());
                } catch (java.io.IOException e) {
                    Thread.sleep(25);
                }
            }
            throw new AssertionError("rank 0 never listened");
        });
        Socket in = l.accept();
        l.close();
        RawPeer p = new RawPeer(out.get(20, TimeUnit.SECONDS), in);
        toClose.add(p);
        return p;
    }

    @Test
    void aSilentPeerMakesTheOperationFailAfterTheDeadlineAndTheGroupStaysBroken() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        String[] a = addresses(hf);
        Future<GroupImpl> g0 = pool.submit(() -> init(0, hf, "1", Map.of()));
        rawRank1(a);
        GroupImpl g = g0.get(20, TimeUnit.SECONDS);
        Array x = Array.ones(DType.FLOAT32, 100);
        assertThatThrownBy(() -> g.allReduce(x, Array.zerosLike(x), ReduceOp.SUM))
                .isInstanceOf(DeadlineExceededException.class)
                .hasMessageContaining("rank 0").hasMessageContaining("rank 1 (").hasMessageContaining("JDIST_TIMEOUT");
        long start = System.nanoTime();
        assertThatThrownBy(() -> g.allReduce(x, Array.zerosLike(x), ReduceOp.SUM))
                .isInstanceOf(DeadlineExceededException.class).hasMessageContaining("broke earlier");
        assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(1));
    }

    @Test
    void aPeerThatClosesIsPeerLostNamingRankAddressAndDirection() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        String[] a = addresses(hf);
        Future<GroupImpl> g0 = pool.submit(() -> init(0, hf, "20", Map.of()));
        RawPeer peer = rawRank1(a);
        GroupImpl g = g0.get(20, TimeUnit.SECONDS);
        peer.close();
        Array x = Array.ones(DType.FLOAT32, 100);
        assertThatThrownBy(() -> g.allReduce(x, Array.zerosLike(x), ReduceOp.SUM))
                .isInstanceOf(PeerLostException.class)
                .hasMessageContaining("rank 0").hasMessageContaining("rank 1 (").hasMessageContaining("127.0.0.1:")
                .hasMessageMatching("(?s).*(sending|receiving).*");
        assertThatThrownBy(() -> g.allGather(x, Array.zeros(DType.FLOAT32, 200)))
                .isInstanceOf(PeerLostException.class).hasMessageContaining("broke earlier");
    }

    @Test
    void nonNeighbourSendFailsBeforeAnyByteMoves() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> results = RingTestSupport.onEveryRank(hf, 4, Map.of(), g -> {
            int far = (g.rank() + 2) % 4;
            try {
                g.send(Array.ones(DType.INT32, 3), far);
                return "no error";
            } catch (IllegalArgumentException e) {
                // the ring still works afterwards: nothing went out
                Array x = Array.ones(DType.INT32, 10);
                Array y = Array.zerosLike(x);
                g.allReduce(x, y, ReduceOp.SUM);
                return e.getMessage().contains("rank " + g.rank()) && e.getMessage().contains("rank " + far)
                        && y.getDouble(9) == 4 ? "ok" : "bad: " + e.getMessage() + " / " + y;
            }
        });
        assertThat(results).containsOnly("ok");
    }

    // ------------------------------------------------------------------ authentication (JDIST_JOB_TOKEN)

    /** An all_sum of ones on both ranks of a 2-rank ring gives 2 everywhere. */
    private void assertBothSumOnes(GroupImpl g0, GroupImpl g1) throws Exception {
        Future<Array> f = pool.submit(() -> {
            Array y = Array.zeros(DType.FLOAT32, 5);
            g0.allReduce(Array.ones(DType.FLOAT32, 5), y, ReduceOp.SUM);
            return y;
        });
        Array y1 = Array.zeros(DType.FLOAT32, 5);
        g1.allReduce(Array.ones(DType.FLOAT32, 5), y1, ReduceOp.SUM);
        assertThat(f.get(20, TimeUnit.SECONDS).toFloatArray()).containsOnly(2f);
        assertThat(y1.toFloatArray()).containsOnly(2f);
    }

    @Test
    void ranksWithTheSameTokenFormTheRingAndStrangersCannotJoinOrStallIt() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 2);
        String[] a = addresses(hf);
        // strangers connect to rank 0's first address before rank 1 does: one stays silent, one sends junk
        Future<GroupImpl> g0 = pool.submit(() -> init(0, hf, "20", Map.of("JDIST_JOB_TOKEN", "s3cret")));
        Socket silent = null;
        Socket junk = null;
        for (int i = 0; i < 400 && junk == null; i++) {
            try {
                silent = new Socket(at(a[0]).getAddress(), at(a[0]).getPort());
                junk = new Socket(at(a[0]).getAddress(), at(a[0]).getPort());
            } catch (java.io.IOException e) {
                Thread.sleep(25);
            }
        }
        assertThat(junk).as("rank 0 listens").isNotNull();
        toClose.add(silent);
        toClose.add(junk);
        OutputStream o = junk.getOutputStream();
        o.write("JDISTAU1".getBytes());
        o.write(new byte[32]);
        o.flush();
        GroupImpl g1 = init(1, hf, "20", Map.of("JDIST_JOB_TOKEN", "s3cret"));
        GroupImpl g = g0.get(20, TimeUnit.SECONDS);
        assertBothSumOnes(g, g1);
    }

    /**
     * Rank 0 reaches rank 1 through a relay that accepts every connection and closes it while rank 1 does not listen
     * yet (as a service mesh's sidecar or a NAT relay does). A jdist acceptor answers every hello before judging the
     * token, so a connection closed before any answer is retried like a refused one, not reported as a rejected token.
     */
    @Test
    void aConnectionClosedBeforeTheFirstAnswerIsRetriedLikeARefusedOne() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        String[] a = addresses(hf);
        InetSocketAddress rank1 = at(a[1]);
        ServerSocket relay = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        toClose.add(relay);
        java.util.concurrent.atomic.AtomicInteger closedEarly = new java.util.concurrent.atomic.AtomicInteger();
        pool.submit(() -> {
            while (!relay.isClosed()) {
                Socket in = relay.accept();
                toClose.add(in);
                Socket out = new Socket();
                try {
                    out.connect(rank1, 2_000);
                } catch (java.io.IOException refused) {
                    closedEarly.incrementAndGet();
                    in.close();
                    continue;
                }
                toClose.add(out);
                pool.submit(() -> in.getInputStream().transferTo(out.getOutputStream()));
                pool.submit(() -> out.getInputStream().transferTo(in.getOutputStream()));
            }
            return null;
        });
        // rank 0's hostfile names the relay as rank 1's address; rank 1 listens where its own hostfile says
        Path viaRelay = Files.writeString(dir.resolve("via-relay.json"),
                "[[\"" + a[0] + "\"], [\"127.0.0.1:" + relay.getLocalPort() + "\"]]");
        Future<GroupImpl> g0 = pool.submit(() -> init(0, viaRelay, "20", Map.of("JDIST_JOB_TOKEN", "s3cret")));
        while (closedEarly.get() < 2 && !g0.isDone()) Thread.sleep(20);
        assertThat(closedEarly.get()).as("rank 0 tried (and the relay closed) while rank 1 was not there").isGreaterThanOrEqualTo(2);
        GroupImpl g1 = init(1, hf, "20", Map.of("JDIST_JOB_TOKEN", "s3cret"));
        GroupImpl g = g0.get(20, TimeUnit.SECONDS);
        assertBothSumOnes(g, g1);
    }

    @Test
    void splitWithATokenFormsAuthenticatedSubRings() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> results = RingTestSupport.onEveryRank(hf, 4, Map.of("JDIST_JOB_TOKEN", "tok"), g -> {
            try (GroupImpl sub = g.split(g.rank() % 2, g.rank())) {
                Array y = Array.zeros(DType.INT32, 3);
                sub.allReduce(Array.fromDoubles(DType.INT32, new double[] {g.rank(), 1, 0}, 3), y, ReduceOp.SUM);
                int want = g.rank() % 2 == 0 ? 0 + 2 : 1 + 3;
                return sub.size() == 2 && sub.rank() == g.rank() / 2 && y.getDouble(0) == want && y.getDouble(1) == 2 ? "ok"
                        : "bad: rank " + sub.rank() + " of " + sub.size() + " sum " + y;
            }
        });
        assertThat(results).containsOnly("ok");
    }

    @Test
    void differentTokensAreRejectedWithAMessageNamingTheVariable() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        Future<GroupImpl> g0 = pool.submit(() -> init(0, hf, "3", Map.of("JDIST_JOB_TOKEN", "one")));
        Throwable t1 = null;
        try {
            init(1, hf, "3", Map.of("JDIST_JOB_TOKEN", "two"));
        } catch (RuntimeException e) {
            t1 = e;
        }
        Throwable t0 = null;
        try {
            g0.get(20, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            t0 = e.getCause();
        }
        assertThat(t0).isNotNull();
        assertThat(t1).isNotNull();
        assertThat(t0.getMessage() + "\n" + t1.getMessage()).contains("JDIST_JOB_TOKEN");
    }

    @Test
    void withoutATokenNothingIsWrittenDuringSetUp() throws Exception {
        // covered byte-for-byte by RingWireTest (assertSilent after set-up); here: a token-less rank accepts a raw peer
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        String[] a = addresses(hf);
        Future<GroupImpl> g0 = pool.submit(() -> init(0, hf, "20", Map.of()));
        RawPeer peer = rawRank1(a);
        g0.get(20, TimeUnit.SECONDS);
        peer.fromRank0().setSoTimeout(200);
        assertThatThrownBy(() -> peer.fromRank0().getInputStream().read()).isInstanceOf(java.net.SocketTimeoutException.class);
    }
}
