package dev.jdist.mesh;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.ring.RingGroup;
import dev.jdist.ring.RingTestSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Failures over the peer mesh (docs/reference/collectives.md §10.2), in one JVM over loopback: a member that leaves or goes
 * silent fails every other member with an error naming ranks and addresses, the group stays broken, and a stranger on
 * a mesh listener changes nothing.
 */
@Timeout(120)
class MeshFailureTest {

    @TempDir
    Path dir;

    private static final Map<String, String> RD = Map.of("JDIST_ALGO", "rd");

    /** Rank 3 of 4 closes its group after 20 all_sums; the others keep going until they fail. */
    @Test
    void aMemberThatLeavesFailsEveryOtherMember() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 4, Map.of("JDIST_TIMEOUT", "20"), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, RD);
            Array y = Array.zeros(DType.FLOAT32, 4);
            for (int i = 0; i < 1000; i++) {
                if (g.rank() == 3 && i == 20) {
                    g.close();
                    return "left";
                }
                try {
                    rg.allReduce(Array.of(1f, 2f, 3f, 4f), y, ReduceOp.SUM);
                } catch (DistributedException e) {
                    String first = e.getClass().getSimpleName() + ": " + e.getMessage();
                    try {
                        rg.allReduce(Array.of(1f), Array.zeros(DType.FLOAT32, 1), ReduceOp.SUM);
                        return "second call worked";
                    } catch (DistributedException again) {
                        return first + " | then: " + again.getMessage();
                    }
                }
            }
            return "never failed";
        });
        assertThat(out.get(3)).isEqualTo("left");
        for (int r = 0; r < 3; r++) {
            assertThat(out.get(r)).as("rank %d", r).startsWith("PeerLostException: rank " + r + ": all_sum")
                    .contains("lost the connection to rank").contains("mesh connection").contains("127.0.0.1:")
                    .contains("The group is closed").contains("| then: rank " + r + ": all_sum cannot run: the ring group broke earlier");
        }
        // the one whose partner left names it
        assertThat(out.get(2)).contains("lost the connection to rank 3");
    }

    /** Rank 3 of 4 stops taking part but stays connected: its partners hit the deadline, the others lose them. */
    @Test
    void aSilentMemberIsADeadlineNamingIt() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 4, Map.of("JDIST_TIMEOUT", "1.5"), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, RD);
            Array y = Array.zeros(DType.FLOAT32, 1);
            rg.allReduce(Array.of(1f), y, ReduceOp.SUM);   // every connection of recursive doubling is made
            if (g.rank() == 3) {
                try {
                    Thread.sleep(6000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return "slept";
            }
            try {
                rg.allReduce(Array.of(1f), y, ReduceOp.SUM);
                return "finished";
            } catch (DeadlineExceededException e) {
                return "deadline: " + e.getMessage();
            } catch (PeerLostException e) {
                return "lost: " + e.getMessage();
            }
        });
        // rank 2 waits for rank 3 in the first round (partner r^1), ranks 0 and 1 then lose rank 2 (or each other)
        assertThat(out.get(2)).startsWith("deadline: rank 2: all_sum (recursive doubling) (step 1 of 2) made no progress for 1.5 s")
                .contains("receiving 4 more byte(s) from rank 3 (127.0.0.1:").contains("mesh connection");
        for (int r = 0; r < 2; r++) assertThat(out.get(r)).as("rank %d", r).containsAnyOf("deadline: rank " + r, "lost: rank " + r);
    }

    @Test
    void aStrangerOnAMeshListenerChangesNothing() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 3, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 3, Map.of("JDIST_JOB_TOKEN", "s3cret"), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, RD);
            PeerMesh mesh = rg.peerMesh().orElseThrow();
            if (g.rank() == 0) {
                // junk, an HTTP request and a silent connection to rank 2's listener before anyone connects to it
                for (String junk : new String[] {"hello", "GET / HTTP/1.1\r\n\r\n", ""}) {
                    try (Socket s = new Socket(mesh.member(2).address().getAddress(), mesh.member(2).address().getPort())) {
                        OutputStream o = s.getOutputStream();
                        o.write(junk.getBytes());
                        o.flush();
                    } catch (Exception e) {
                        return "stranger failed: " + e;
                    }
                }
            }
            Array y = Array.zeros(DType.FLOAT32, 1);
            rg.allReduce(Array.of((float) g.rank()), y, ReduceOp.SUM);
            return y.getDouble(0) + " " + mesh.openConnections();
        });
        // three ranks, recursive doubling: rank 0 folds into rank 1, which exchanges with rank 2
        assertThat(out).containsExactly("3.0 1", "3.0 2", "3.0 1");
    }
}
