package dev.jdist.jaccl;

import dev.jdist.ConnectFailedException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Side-channel behaviour with ranks as threads (fast); real processes are in {@link TcpSideChannelIT}. */
class SideChannelTest {

    @Test
    @Timeout(60)
    void allGatherIsRankOrderedAndRecordsArePadded() throws Exception {
        int n = 3, port = FreePorts.one();
        List<String> results = RankThreads.run(n, 30, rank -> {
            try (TcpSideChannel ch = TcpSideChannel.connect(rank, n, "127.0.0.1", port, Duration.ofSeconds(20), s -> {})) {
                byte[] all = ch.allGather(new byte[]{(byte) rank, (byte) (rank + 100)});
                List<byte[]> recs = new ArrayList<>();
                for (int i = 0; i < rank; i++) recs.add(new byte[]{(byte) i, 7, 7, 7});
                List<List<byte[]>> got = ch.allGatherRecords(recs, 4);
                ch.barrier();
                return java.util.Arrays.toString(all) + " " + got.stream().map(List::size).toList()
                        + " " + (got.get(2).isEmpty() ? "" : got.get(2).get(1)[0]);
            }
        });
        for (String r : results) assertThat(r).isEqualTo("[0, 100, 1, 101, 2, 102] [0, 1, 2] 1");
    }

    @Test
    @Timeout(60)
    void aPeerThatDiesMidExchangeIsPeerLostNamingIt() throws Exception {
        int port = FreePorts.one();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<TcpSideChannel> one = pool.submit(() -> TcpSideChannel.connect(1, 2, "127.0.0.1", port, Duration.ofSeconds(20), s -> {}));
            TcpSideChannel zero = TcpSideChannel.connect(0, 2, "127.0.0.1", port, Duration.ofSeconds(20), s -> {});
            one.get(20, TimeUnit.SECONDS).close();
            assertThatThrownBy(() -> zero.allGatherInt(5)).isInstanceOf(PeerLostException.class)
                    .hasMessageContaining("rank 1").hasMessageContaining("127.0.0.1");
            zero.close();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    @Timeout(60)
    void aSilentPeerIsADeadlineNamingIt() throws Exception {
        int port = FreePorts.one();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<TcpSideChannel> one = pool.submit(() -> TcpSideChannel.connect(1, 2, "127.0.0.1", port, Duration.ofMillis(3000), s -> {}));
            TcpSideChannel zero = TcpSideChannel.connect(0, 2, "127.0.0.1", port, Duration.ofMillis(3000), s -> {});
            try (TcpSideChannel ignored = one.get(20, TimeUnit.SECONDS)) {
                long t0 = System.nanoTime();
                assertThatThrownBy(() -> zero.allGatherInt(5)).isInstanceOf(dev.jdist.DeadlineExceededException.class)
                        .hasMessageContaining("rank 1").hasMessageContaining("JDIST_TIMEOUT");
                assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(20));
            }
            zero.close();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    @Timeout(60)
    void noCoordinatorIsConnectFailedNamingTheAddressAfterRetries() throws Exception {
        int port = FreePorts.one();
        List<String> log = new ArrayList<>();
        assertThatThrownBy(() -> TcpSideChannel.connect(2, 3, "127.0.0.1", port, Duration.ofMillis(2500), log::add))
                .isInstanceOf(ConnectFailedException.class).hasMessageContaining("127.0.0.1:" + port).hasMessageContaining("rank 2");
        assertThat(log).isNotEmpty().allMatch(l -> l.contains("retrying in"));
    }

    @Test
    void customSideChannelChecksTheLength() {
        SideChannel ok = SideChannel.custom(1, 2, (rank, size) -> (src, b) -> {
            byte[] out = new byte[size * b];
            System.arraycopy(src, 0, out, rank * b, b);
            return out;
        });
        assertThat(ok.allGatherInt(9)).containsExactly(0, 9);
        SideChannel bad = SideChannel.custom(0, 2, (rank, size) -> (src, b) -> src);
        assertThatThrownBy(() -> bad.allGather(new byte[3])).isInstanceOf(DistributedException.class)
                .hasMessageContaining("3 bytes").hasMessageContaining("6 bytes");
        assertThatThrownBy(() -> SideChannel.custom(0, 2, (r, s) -> null)).isInstanceOf(IllegalArgumentException.class);
    }
}
