package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.CollectiveChecks;
import dev.jdist.DType;
import dev.jdist.Group;
import dev.jdist.PeerOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operations MLX lacks on the ring (docs/reference/collectives.md §13), over real loopback sockets with a rank per thread:
 * between jdist members (the peer mesh) every value {@link CollectiveChecks} knows, on every rank, over TCP and shared
 * memory; with MLX peers possible, MLX's neighbour rule for send/recv and a clear error for the rest.
 */
@Timeout(300)
class RingPeerOperationsTest {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"2,tcp", "3,tcp", "4,tcp", "5,tcp", "3,shm"})
    void everyNewOperationGivesTheDocumentedBytesOnEveryRank(int n, String transport) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        CollectiveChecks.Options o = new CollectiveChecks.Options(List.of(DType.values()), List.of(DType.FLOAT32, DType.INT64),
                300_000, true);
        List<List<String>> out = RingTestSupport.onEveryRank(hf, n, Map.of("JDIST_TRANSPORT", transport), impl -> {
            ((RingGroup) impl).membersAreJdist(null, Map.of());
            return CollectiveChecks.run(CollectiveChecks.jdistGroup(impl), o);
        });
        for (int r = 0; r < n; r++) assertThat(out.get(r)).as("rank %d", r).isEmpty();
    }

    @Test
    void withMlxPeersPossibleSendRecvKeepTheNeighbourRuleAndTheRestFailClearly() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 4, Map.of(), impl -> {
            Group g = CollectiveChecks.groupWithMlxPeersPossible(impl);
            int r = g.rank();
            StringBuilder sb = new StringBuilder();
            // neighbours as MLX has them
            if (r % 2 == 0) {
                g.send(Array.of(r), (r + 1) % 4);
                sb.append(g.recv(new int[] {1}, DType.INT32, (r + 1) % 4).getLong(0));
            } else {
                sb.append(g.recv(new int[] {1}, DType.INT32, r - 1).getLong(0));
                g.send(Array.of(r), r - 1);
            }
            try {
                g.send(Array.of(r), (r + 2) % 4);
                sb.append(" sent to a non-neighbour");
            } catch (IllegalArgumentException e) {
                sb.append(e.getMessage().contains("not supported with MLX peers in the group") ? " p2p-refused" : " " + e.getMessage());
            }
            for (Runnable call : List.<Runnable>of(() -> g.broadcast(Array.of(1f), 0), () -> g.allToAll(Array.zeros(DType.FLOAT32, 4)),
                    () -> g.gather(Array.of(1f), 0), () -> g.scatter(Array.zeros(DType.FLOAT32, 4), 0),
                    () -> g.batchSendRecv(List.of(PeerOp.send(Array.of(1f), (r + 1) % 4))), g::barrier)) {
                try {
                    call.run();
                    sb.append(" ran");
                } catch (RuntimeException e) {
                    sb.append(e.getMessage().contains("not supported with MLX peers in the group") ? " refused" : " " + e);
                }
            }
            return sb.toString();
        });
        assertThat(out.get(0)).isEqualTo("1 p2p-refused refused refused refused refused refused refused");
        assertThat(out.get(1)).isEqualTo("0 p2p-refused refused refused refused refused refused refused");
    }
}
