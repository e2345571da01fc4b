package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Group;
import dev.jdist.TestGroups;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.cluster.JobDiscovery;
import dev.jdist.rendezvous.Rendezvous;
import dev.jdist.rendezvous.StoreRendezvous;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.RankThreads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The nccl backend started from a rendezvous (torchrun-style variables, no NCCL_HOST_IP/NCCL_PORT): the agreement
 * through the store, rank 0's unique id through the store, the device from LOCAL_RANK; against the stand-in
 * libnccl/libcudart, ranks as threads.
 */
@Timeout(120)
class NcclRendezvousStubIT {
    NcclStubLibraries stubs;

    @BeforeEach
    void stubs() throws Exception {
        stubs = NcclStubLibraries.get();
        stubs.reset();
    }

    @AfterEach
    void reset() {
        stubs.reset();
    }

    @Test
    void threeRanksMeetThroughTheStoreAndShareRankZerosUniqueId() throws Exception {
        int n = 3;
        int port = FreePorts.one();
        List<String> results = RankThreads.run(n, 60, r -> {
            Map<String, String> env = new HashMap<>(stubs.env());
            env.putAll(Map.of("RANK", "" + r, "WORLD_SIZE", "" + n, "LOCAL_RANK", "" + r, "MASTER_ADDR", "127.0.0.1",
                    "MASTER_PORT", "" + port, "JDIST_TIMEOUT", "30"));
            ClusterJob job = JobDiscovery.detect(env).job().orElseThrow();
            StoreRendezvous rv = Rendezvous.open(job, env);
            try {
                GroupImpl impl = new NcclBackend(Map.of()).join(true, rv).orElseThrow();
                try (Group g = TestGroups.wrap(impl)) {
                    Array s = g.allSum(Array.full(DType.FLOAT32, r + 1, 8));
                    return g.backend() + " " + g.rank() + "/" + g.size() + " sum " + s.getDouble(7) + " table "
                            + rv.table().orElseThrow().rank(r).backend();
                }
            } finally {
                rv.close();
            }
        });
        for (int r = 0; r < n; r++) assertThat(results.get(r)).isEqualTo("nccl " + r + "/3 sum 6.0 table nccl");
    }
}
