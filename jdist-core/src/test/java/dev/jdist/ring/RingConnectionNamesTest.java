package dev.jdist.ring;

import dev.jdist.cluster.RingHostfile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

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
}
