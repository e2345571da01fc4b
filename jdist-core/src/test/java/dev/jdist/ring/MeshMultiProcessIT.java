package dev.jdist.ring;

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
    @ValueSource(ints = {2, 3, 5, 8})
    @Timeout(600)
    void jobTokenGroupsChooseTheirAlgorithmsAndAgreeBitForBit(int n) throws Exception {
        run(n, "jdist", Map.of("JDIST_JOB_TOKEN", "mesh-it", "JDIST_TIMEOUT", "120"), "(mesh, ");
    }

    @Test
    @Timeout(300)
    void withoutATokenThereIsNoMesh() throws Exception {
        run(3, "mlx", Map.of("JDIST_ALGO", "rd", "JDIST_TIMEOUT", "60"), "(no mesh, ring)");
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
