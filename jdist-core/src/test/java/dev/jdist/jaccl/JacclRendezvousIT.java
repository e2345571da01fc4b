package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.cluster.JobDiscovery;
import dev.jdist.rendezvous.Rendezvous;
import dev.jdist.rendezvous.StoreRendezvous;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * JACCL started from a rendezvous (torchrun-style variables and a device file, no coordinator): the side channel's
 * all-gathers go through the rendezvous store. Against the fake libibverbs of {@link FakeVerbsIT}, ranks as threads.
 */
class JacclRendezvousIT {

    @Test
    @Timeout(200)
    void aThreeRankMeshMeetsThroughTheStore(@TempDir Path dir) throws Throwable {
        Path so = FakeVerbsIT.library(dir);
        Path file = dir.resolve("devices.json");
        Files.writeString(file, "[[null,\"fake1\",\"fake2\"],[\"fake0\",null,\"fake2\"],[\"fake0\",\"fake1\",null]]");
        int n = 3;
        int port = FreePorts.one();
        List<String> got = RankThreads.run(n, 150, rank -> {
            Map<String, String> env = new HashMap<>(Map.of("RANK", "" + rank, "WORLD_SIZE", "" + n,
                    "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port, "MLX_IBV_DEVICES", file.toString(),
                    "JDIST_JACCL_LIB", so.toString(), "JDIST_TIMEOUT", "60"));
            ClusterJob job = JobDiscovery.detect(env).job().orElseThrow();
            try (StoreRendezvous rv = Rendezvous.open(job, env);
                 JacclGroup g = (JacclGroup) new JacclBackend().join(true, rv).orElseThrow()) {
                Array out = Array.zeros(DType.FLOAT32, 1000);
                g.allReduce(Array.full(DType.FLOAT32, rank + 1, 1000), out, ReduceOp.SUM);
                return g.rank() + "/" + g.size() + " " + out.getDouble(999) + " " + rv.table().orElseThrow().rank(rank).backend();
            }
        });
        for (int r = 0; r < n; r++) assertThat(got.get(r)).isEqualTo(r + "/3 6.0 jaccl");
        assertThat(FakeVerbsIT.violations(so)).as("spec violations seen by the fake libibverbs").isEmpty();
    }
}
