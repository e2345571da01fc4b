package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * How errors name a ring connection: by the peer's own hostfile address, also for the {@code left} connections this
 * rank accepted on its own address (an operator on several hosts must be pointed at the peer's machine).
 */
@Timeout(60)
class RingConnectionNamesTest {
    @TempDir
    Path dir;

    @Test
    void everyConnectionIsNamedByItsPeersOwnAddress() throws Exception {
        int n = 3;
        RingHostfile hf = RingHostfile.read(RingTestSupport.hostfile(dir, n, 2));
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<RingConnector.Connections>> formed = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                RingSettings s = RingSettings.of(r, hf);
                formed.add(pool.submit(() -> new RingConnector(s, new RingLog(false, "rank " + s.rank()))
                        .connect(RingConnector.listenOnOwnAddresses(s))));
            }
            List<RingConnector.Connections> all = new ArrayList<>();
            for (Future<RingConnector.Connections> f : formed) all.add(f.get(30, TimeUnit.SECONDS));
            try {
                for (int r = 0; r < n; r++) {
                    int left = (r + n - 1) % n, right = (r + 1) % n;
                    for (int j = 0; j < 2; j++) {
                        RingConnection in = all.get(r).left().get(j), out = all.get(r).right().get(j);
                        assertThat(in.describe("")).isEqualTo("rank " + left + " (" + hf.addresses(left).get(j).text()
                                + ", connection left[" + j + "])");
                        assertThat(out.describe("")).isEqualTo("rank " + right + " (" + hf.addresses(right).get(j).text()
                                + ", connection right[" + j + "])");
                    }
                }
            } finally {
                for (RingConnector.Connections c : all) c.closeAll();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A peer whose end is closed with bytes unread (SO_LINGER 0 here; a process killed while stopped or busy in practice)
     * resets the connection: the error says what a reset means, and names the peer by its own address.
     */
    @Test
    void aResetConnectionIsExplained() throws Exception {
        RingHostfile hf = RingHostfile.read(RingTestSupport.hostfile(dir, 2, 1));
        InetSocketAddress own = hf.addresses(1).getFirst().socketAddress();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(own);
            Future<GroupImpl> rank0 = pool.submit(() -> RingGroup.connect(RingSettings.of(0, hf)));
            Socket right = null;
            for (int attempt = 0; right == null && attempt < 200; attempt++) {
                try {
                    right = new Socket(hf.addresses(0).getFirst().socketAddress().getAddress(), hf.addresses(0).getFirst().port());
                } catch (java.io.IOException notYet) {
                    Thread.sleep(50);
                }
            }
            assertThat(right).as("connected to rank 0").isNotNull();
            try (Socket r = right; Socket left = listener.accept(); GroupImpl g = rank0.get(30, TimeUnit.SECONDS)) {
                Future<?> sum = pool.submit(() -> g.allReduce(Array.ones(DType.FLOAT32, 1 << 16), Array.zeros(DType.FLOAT32, 1 << 16),
                        ReduceOp.SUM));
                // rank 0 sends first: wait until it is in the all_sum (its bytes arrive), leave them unread, abort both connections
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (left.getInputStream().available() == 0 && r.getInputStream().available() == 0 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                for (Socket s : List.of(left, r)) {
                    s.setSoLinger(true, 0);
                    s.close();
                }
                assertThatThrownBy(() -> sum.get(30, TimeUnit.SECONDS)).cause().isInstanceOf(PeerLostException.class)
                        .hasMessageContaining("rank 1 (" + hf.addresses(1).getFirst().text() + ", connection ")
                        .hasMessageContaining("a reset, not an orderly close");
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
