package dev.jdist.ring;

import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Separate JVMs per rank, started with MLX_RANK/MLX_HOSTFILE ({@link MeshCheckProgram}): with a job token every rank
 * forms the peer mesh and checks every op, dtype and algorithm (values on every rank, bitwise); without one no rank
 * forms a mesh and the ring runs as MLX's.
 */
class MeshMultiProcessIT {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {3})
    @Timeout(600)
    void jobTokenGroupsChooseTheirAlgorithmsAndAgreeBitForBit(int n) throws Exception {
        run(n, "jdist", Map.of("JDIST_JOB_TOKEN", "mesh-it", "JDIST_TIMEOUT", "120"), "(mesh, ");
    }

    /** The rest of the sweep: 2 and 5 ranks (CONTRIBUTING.md, "Build and test"). */
    @LongTest
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 5})
    @Timeout(600)
    void jobTokenGroupsChooseTheirAlgorithmsAndAgreeBitForBitRestOfTheSweep(int n) throws Exception {
        jobTokenGroupsChooseTheirAlgorithmsAndAgreeBitForBit(n);
    }

    /** The same with 8 JVMs (a power of two, every algorithm's full exchange): a minute of both cores, so in the long tier. */
    @LongTest
    @Test
    @Timeout(600)
    void jobTokenGroupsOfEightRanksChooseTheirAlgorithmsAndAgreeBitForBit() throws Exception {
        run(8, "jdist", Map.of("JDIST_JOB_TOKEN", "mesh-it", "JDIST_TIMEOUT", "120"), "(mesh, ");
    }

    /**
     * Hosts faked per rank with JDIST_HOST_ID: 2 ranks on host a, 3 on host b, 1 on host c (uneven, one alone). With
     * JDIST_TRANSPORT unset (a job across hosts) and over a shared-memory ring the pairs inside a faked host run through
     * shared memory and the pairs between hosts over TCP, in the same operations; JDIST_TRANSPORT=tcp keeps every pair
     * on TCP. (Over the shared-memory ring the default keeps the ring; the forced algorithms still run.)
     */
    @ParameterizedTest(name = "JDIST_TRANSPORT={0}")
    @ValueSource(strings = {"unset", "tcp", "shm"})
    @Timeout(600)
    void ranksOnSeveralFakedHostsChooseTheHierarchyAndAgreeBitForBit(String transport) throws Exception {
        String[] hostOf = {"a", "a", "b", "b", "c", "b"};
        int n = hostOf.length;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                Map<String, String> env = new java.util.HashMap<>(Map.of("JDIST_JOB_TOKEN", "hier-it", "JDIST_TIMEOUT", "120",
                        "JDIST_HOST_ID", "host-" + hostOf[r]));
                if (!transport.equals("unset")) env.put("JDIST_TRANSPORT", transport);
                ranks.start(dir, r, hf, MeshCheckProgram.class, env, "hier");
            }
            for (int r = 0; r < n; r++) {
                int code = ranks.await(r, 540);
                assertThat(code).as("rank %d exit code; outputs:%n%s", r, ranks.allOutputs()).isZero();
            }
            String chosen = transport.equals("shm") ? "ring" : "hier";
            String matesTalk = transport.equals("tcp") ? "tcp" : "shm";
            for (int r = 0; r < n; r++) {
                String out = ranks.output(r);
                assertThat(out).contains("rank " + r + " of " + n + ": OK (hosts [0, 1] | [2, 3, 5] | [4], " + chosen + ")");
                String pairs = out.lines().filter(l -> l.contains(" mesh pairs:")).findFirst().orElse("");
                int mates = 0;
                for (int q = 0; q < n; q++) {
                    if (q == r) continue;
                    boolean sameHost = hostOf[q].equals(hostOf[r]);
                    if (sameHost) mates++;
                    // the hierarchy's intra-host step connects every member to its host's others
                    if (sameHost) assertThat(pairs).as("rank %d", r).contains(" " + q + "=" + matesTalk);
                    else assertThat(pairs).as("rank %d", r).doesNotContain(" " + q + "=shm");
                }
                if (mates == 0) assertThat(pairs).as("rank %d", r).doesNotContain("=shm");
            }
        }
    }

    /**
     * MLX peers possible (no token, and the member probe finds no all-jdist group: JDIST_MEMBER_PROBE=off, as when a
     * member is an MLX process; MlxVariablesIT has the all-jdist case): no mesh, MLX's ring.
     */
    @Test
    @Timeout(300)
    void withMlxPeersPossibleThereIsNoMesh() throws Exception {
        run(3, "mlx", Map.of("JDIST_ALGO", "rd", "JDIST_TIMEOUT", "60", "JDIST_MEMBER_PROBE", "off"), "(no mesh, ring)");
    }

    private void run(int n, String mode, Map<String, String> env, String expected) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) ranks.start(dir, r, hf, MeshCheckProgram.class, env, mode);
            for (int r = 0; r < n; r++) {
                int code = ranks.await(r, 540);
                assertThat(code).as("rank %d exit code; outputs:%n%s", r, ranks.allOutputs()).isZero();
            }
            for (int r = 0; r < n; r++) assertThat(ranks.output(r)).contains("rank " + r + " of " + n + ": OK " + expected);
            if (mode.equals("mlx")) assertThat(ranks.output(0)).contains("JDIST_ALGO=rd is ignored");
        }
    }
}
