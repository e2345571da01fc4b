package dev.jdist.rendezvous;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ring.RingBackend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Ranks meet through the rendezvous, each writes the same MLX hostfile, and a ring forms from MLX_RANK/MLX_HOSTFILE. */
class MlxHandOffTest {

    @Test
    @Timeout(120)
    void everyRankGetsTheSameHostfileAndTheRingFormsFromIt(@TempDir Path dir) throws Exception {
        int n = 3;
        int port = FreePorts.one();
        List<RendezvousInProcessTest.Outcome> out = RendezvousInProcessTest.runRanks(n, r -> {
            MlxHandOff.Result h = MlxHandOff.prepare(RendezvousInProcessTest.torchrun(r, n, port), dir.resolve("rank" + r), 2);
            Map<String, String> child = new HashMap<>(h.environment());
            child.put("JDIST_TIMEOUT", "30");
            try (GroupImpl g = new RingBackend().init(true, child).orElseThrow()) {
                Array sum = Array.zeros(DType.INT32, 1);
                g.allReduce(Array.full(DType.INT32, r + 1, 1), sum, dev.jdist.ReduceOp.SUM);
                return h.environment().get("MLX_RANK") + " " + Files.readString(h.hostfile()).strip() + " " + sum.getDouble(0);
            }
        });
        String hostfile = null;
        for (int r = 0; r < n; r++) {
            assertThat(out.get(r).error()).as("rank %d; all: %s", r, out).isNull();
            String v = (String) out.get(r).value();
            assertThat(v).startsWith(r + " [[\"127.0.0.1:").endsWith(" 6.0");
            String file = v.substring(v.indexOf(' ') + 1, v.lastIndexOf(' '));
            if (hostfile == null) hostfile = file;
            assertThat(file).isEqualTo(hostfile);
        }
        assertThat(hostfile.split("\\],\\[")).hasSize(n);
    }
}
