package dev.jdist.nccl;

import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * scripts/gpu-check.sh as a GPU machine without a JDK runs it: from the jlinked runtime that
 * scripts/gpu-bundle.sh builds (JDIST_GPU_CHECK_BUNDLE=1 makes the script ignore the JDK here), against the
 * stub libraries in their file mode: one rank (every op and dtype, then the abort path of a rank that never
 * joins), and two ranks (then rank 1 stops itself and rank 0 must fail within JDIST_TIMEOUT).
 */
@LongTest   // builds a jlinked runtime, as the rebuild tests do
@Timeout(600)
class GpuCheckScriptIT {

    @Test
    void theGpuCheckScriptPassesFromTheJlinkedRuntimeWithOneAndTwoRanks() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Path root = Path.of("..").toAbsolutePath().normalize();
        Path bundle = run(root, new String[] {"bash", "scripts/gpu-bundle.sh"}, Path.of("target/gpu-bundle-build.log"), 300,
                java.util.Map.of("JDIST_GPU_BUNDLE_NO_BUILD", "1"));
        String built = Files.readString(bundle, StandardCharsets.UTF_8);
        assertThat(built).contains("modules java.base,jdk.incubator.vector");
        for (int ranks : new int[] {1, 2}) {
            Path world = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "gpu-check-world-");
            Path out = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "gpu-check-out-");
            java.util.Map<String, String> env = new java.util.HashMap<>(stubs.env());
            env.put("JDIST_GPU_CHECK_BUNDLE", "1");
            env.put("JDIST_GPU_CHECK_RANKS", Integer.toString(ranks));
            env.put("JDIST_GPU_CHECK_ABORT_TIMEOUT", "2s");
            env.put("JDIST_GPU_CHECK_STOP_TIMEOUT", "3s");
            env.put("JDIST_STUB_NCCL_WORLD_DIR", world.toString());
            env.put("OUT", out.toString());
            Path log = run(root, new String[] {"bash", "scripts/gpu-check.sh"}, out.resolve("script.log"), 300, env);
            String text = Files.readString(log, StandardCharsets.UTF_8);
            assertThat(text).as(text).contains("target/gpu-bundle/runtime/bin/java").contains("== exit status 0")
                    .doesNotContain("FAIL");
            if (ranks == 1) {
                assertThat(text).contains("ok   abort path: creation with a rank that never joins ends in DeadlineExceededException")
                        .contains("ok   abort path: a new communicator works after the abort");
            } else {
                assertThat(text).contains("rank 1 stops itself now")
                        .contains("ok   peer-stop: all_sum with a stopped peer ends in DeadlineExceededException");
            }
        }
    }

    /** Runs {@code cmd} in {@code dir} with extra environment, output to {@code log}; fails on a non-zero status. */
    private static Path run(Path dir, String[] cmd, Path log, long seconds, java.util.Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toAbsolutePath().toFile());
        for (String k : java.util.List.of("NCCL_HOST_IP", "NCCL_PORT", "MLX_RANK", "MLX_WORLD_SIZE", "JDIST_TIMEOUT")) {
            pb.environment().remove(k);
        }
        pb.environment().putAll(env);
        Process p = pb.start();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", cmd) + " did not finish within " + seconds + " s");
        }
        assertThat(p.exitValue()).as("%s:\n%s", String.join(" ", cmd), Files.readString(log.toAbsolutePath())).isZero();
        return log.toAbsolutePath();
    }
}
