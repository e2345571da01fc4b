package dev.jdist.ring;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.JavaCommand;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A /dev/shm too small for the peer mesh's pair (docs/reference/collectives.md §10.2): two ranks in a mount namespace of
 * their own whose /dev/shm (a 320 KiB tmpfs) holds the shared-memory ring's files (2 × 140 KiB with 64 KiB links) but not
 * the mesh pair's (140 KiB more). The pair stays on TCP, one line on stderr says why, and the job runs to the end with
 * the right sums. Needs root (mount namespaces); the host's /dev/shm is not touched.
 */
@Timeout(300)
class MeshShmFallbackIT {

    @TempDir
    Path dir;

    @Test
    void aPairThatCannotGetSharedMemoryStaysOnTcpWithOneLine() throws Exception {
        Requirements.require(Requirements.root(), Requirements.command("unshare", "util-linux"),
                Requirements.command("nsenter", "util-linux"), Requirements.command("mount", "mount"));
        try (ChildProcesses holder = new ChildProcesses(); RankProcesses ranks = new RankProcesses()) {
            // holds a mount namespace whose /dev/shm is small; the ranks enter it
            holder.start(dir, "namespace", List.of("unshare", "--mount", "--propagation", "private", "sh", "-c",
                    "mount -t tmpfs -o size=320k,mode=1777 jdist-test /dev/shm && echo ready && exec sleep 280"), Map.of());
            holder.awaitOutput(0, "ready", 30);
            String ns = Long.toString(holder.process(0).pid());
            Path hf = RingTestSupport.hostfile(dir, 2, 1);
            Map<String, String> env = Map.of("JDIST_JOB_TOKEN", "mesh-shm-fallback", "JDIST_TIMEOUT", "60",
                    "JDIST_TRANSPORT", "shm", "JDIST_SHM_BUFFER_KIB", "64", "JDIST_ALGO", "rd");
            for (int r = 0; r < 2; r++) {
                List<String> command = new ArrayList<>(List.of("nsenter", "-t", ns, "-m", "--"));
                command.addAll(JavaCommand.of(LivenessProgram.class, "loop", "200", "60"));
                Map<String, String> rankEnv = new HashMap<>(env);
                rankEnv.put("MLX_RANK", Integer.toString(r));
                rankEnv.put("MLX_HOSTFILE", hf.toString());
                ranks.start(dir, "rank" + r, command, rankEnv);
            }
            for (int r = 0; r < 2; r++) {
                int code = ranks.await(r, 120);
                assertThat(code).as("rank %d; outputs:%n%s", r, ranks.allOutputs()).isZero();
                assertThat(ranks.output(r)).contains("looping (mesh connections: 1, over shared memory: 0)")
                        .contains("rank " + r + " finished");
            }
            String all = ranks.allOutputs();
            assertThat(all.split("no shared memory with rank", -1)).as("one line, from the rank that saw why:%n%s", all).hasSize(2);
            assertThat(ranks.output(0)).contains("jdist: rank 0 (mesh): no shared memory with rank 1 (cannot create a ")
                    .contains("No space left on device").contains("this pair runs over TCP");
        }
    }
}
