package dev.jdist.nccl;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The docs/reference/collectives.md §6.3 bootstrap on loopback, ranks as threads (NcclBootstrapIT runs it with real processes). */
@Timeout(60)
class NcclBootstrapTest {

    static NcclConfig cfg(String host, int port, int rank, int n, long timeoutMs) {
        return new NcclConfig(host, port, rank, n, timeoutMs, false);
    }

    static byte[] id(long seed) {
        byte[] b = new byte[128];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void rankZeroServesTheSameIdToEveryOtherRank() throws Exception {
        int port = FreePorts.one();
        int n = 5;
        byte[] expected = id(42);
        List<byte[]> got = RankThreads.run(n, 60, r -> NcclBootstrap.exchange(cfg("127.0.0.1", port, r, n, 10_000), () -> {
            assertThat(r).as("only rank 0 asks for the id").isZero();
            return expected.clone();
        }));
        for (byte[] b : got) assertThat(b).isEqualTo(expected);
    }

    @Test
    void theWireCarriesExactlyTheIdAndRankZeroNeedsNoGreeting() throws Exception {
        int port = FreePorts.one();
        byte[] expected = id(7);
        CompletableFuture<Void> server = CompletableFuture.runAsync(
                () -> NcclBootstrap.serve(cfg("127.0.0.1", port, 0, 2, 10_000), expected));
        byte[] raw = null;
        for (int i = 0; i < 100 && raw == null; i++) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
                s.setSoTimeout(5000);
                raw = s.getInputStream().readAllBytes();    // until rank 0 closes
            } catch (java.net.ConnectException e) {
                Thread.sleep(50);
            }
        }
        assertThat(raw).isEqualTo(expected);
        server.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aRankStartedBeforeRankZeroRetriesUntilItListens() throws Exception {
        int port = FreePorts.one();
        byte[] expected = id(3);
        long start = System.nanoTime();
        CompletableFuture<byte[]> early = CompletableFuture.supplyAsync(
                () -> NcclBootstrap.exchange(cfg("127.0.0.1", port, 1, 2, 20_000), () -> null));
        Thread.sleep(1300);
        assertThat(early).isNotDone();
        NcclBootstrap.exchange(cfg("127.0.0.1", port, 0, 2, 20_000), expected::clone);
        assertThat(early.get(10, TimeUnit.SECONDS)).isEqualTo(expected);
        assertThat(System.nanoTime() - start).isGreaterThan(TimeUnit.MILLISECONDS.toNanos(1300));
    }

    @Test
    void aRankThatFindsNobodyGivesUpAfterTheTimeoutNamingRankTimeoutRetriesAndReason() throws Exception {
        int port = FreePorts.one();
        assertThatThrownBy(() -> NcclBootstrap.exchange(cfg("127.0.0.1", port, 2, 3, 1200), () -> null))
                .isInstanceOf(ConnectFailedException.class)
                .hasMessageContaining("rank 2").hasMessageContaining("127.0.0.1:" + port)
                .hasMessageContaining("MLX_NCCL_TIMEOUT=1200").hasMessageContaining("retries")
                .hasMessageContaining("refused");
    }

    @Test
    void aZeroTimeoutTriesOnce() throws Exception {
        int port = FreePorts.one();
        assertThatThrownBy(() -> NcclBootstrap.fetch(cfg("127.0.0.1", port, 1, 2, 0)))
                .isInstanceOf(ConnectFailedException.class).hasMessageContaining("after 0 retries");
    }

    @Test
    void rankZeroBindsNcclHostIpNotTheWildcard() throws Exception {
        int port = FreePorts.one();
        byte[] expected = id(9);
        CompletableFuture<Void> server = CompletableFuture.runAsync(
                () -> NcclBootstrap.serve(cfg("127.0.0.1", port, 0, 2, 10_000), expected));
        // 127.0.0.2 is this host too: a wildcard listener would answer there
        Thread.sleep(300);
        assertThatThrownBy(() -> NcclBootstrap.fetch(cfg("127.0.0.2", port, 1, 2, 0)))
                .isInstanceOf(ConnectFailedException.class).hasMessageContaining("refused");
        byte[] viaOther = NcclBootstrap.fetch(cfg("127.0.0.1", port, 1, 2, 5_000));
        assertThat(viaOther).isEqualTo(expected);
        server.get(10, TimeUnit.SECONDS);
    }

    @Test
    void rankZeroGivesUpWhenRanksDoNotComeWithinTheTimeout() throws Exception {
        int port = FreePorts.one();
        CompletableFuture<byte[]> one = CompletableFuture.supplyAsync(
                () -> NcclBootstrap.fetch(cfg("127.0.0.1", port, 1, 3, 10_000)));
        assertThatThrownBy(() -> NcclBootstrap.serve(cfg("127.0.0.1", port, 0, 3, 1500), id(1)))
                .isInstanceOf(DeadlineExceededException.class)
                .hasMessageContaining("only 1 of 2").hasMessageContaining("MLX_NCCL_TIMEOUT=1500");
        assertThat(one.get(10, TimeUnit.SECONDS)).isEqualTo(id(1));
    }

    @Test
    void aTakenPortIsAnErrorNamingTheAddress() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            assertThatThrownBy(() -> NcclBootstrap.serve(cfg("127.0.0.1", port, 0, 2, 1000), id(1)))
                    .isInstanceOf(ConnectFailedException.class)
                    .hasMessageContaining("rank 0 could not listen on 127.0.0.1:" + port).hasMessageContaining("NCCL_PORT");
        }
    }

    @Test
    void aShortIdIsAnErrorSayingHowManyBytesCame() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            CompletableFuture<Void> f = CompletableFuture.runAsync(() -> {
                try (Socket s = fake.accept()) {
                    s.getOutputStream().write(new byte[10]);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            assertThatThrownBy(() -> NcclBootstrap.fetch(cfg("127.0.0.1", fake.getLocalPort(), 1, 2, 5000)))
                    .isInstanceOf(ConnectFailedException.class).hasMessageContaining("10 of the 128 bytes");
            f.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aHostWithoutIpv4IsAConfigError() {
        assertThatThrownBy(() -> NcclBootstrap.fetch(cfg("::1", 1234, 1, 2, 0)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("NCCL_HOST_IP=::1");
    }
}
