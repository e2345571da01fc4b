package dev.jdist.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static dev.jdist.nccl.NcclTestSupport.freePort;
import static dev.jdist.nccl.NcclTestSupport.rankEnv;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real processes on loopback: the §6.3 bootstrap between separate JVMs (clients started before the
 * server retry; a lone client times out with an exception, not an exit), and a whole nccl rank
 * configured only through its environment, against the stub libraries.
 */
@Timeout(180)
class NcclProcessesIT {

    record Result(int exit, String out) {}

    static Process start(String mainClass, Map<String, String> env, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(dev.jdist.BuildInfo.jvmFlags());   // native access: NCCL and CUDA are bound with java.lang.foreign
        cmd.add("-cp");
        cmd.add(Path.of("target/classes").toAbsolutePath() + java.io.File.pathSeparator
                + Path.of("target/test-classes").toAbsolutePath());
        cmd.add(mainClass);
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        for (String k : List.of("NCCL_HOST_IP", "NCCL_PORT", "MLX_RANK", "MLX_WORLD_SIZE", "MLX_NCCL_TIMEOUT",
                "JDIST_NCCL_LIBRARY", "JDIST_CUDART_LIBRARY", "JDIST_STUB_NCCL_FAIL", "JDIST_STUB_CUDA_FAIL",
                "JDIST_STUB_NCCL_WORLD_DIR", "JDIST_STUB_NCCL_HANG", "JDIST_STUB_NCCL_ASYNC_ERROR", "JDIST_TIMEOUT")) {
            pb.environment().remove(k);
        }
        pb.environment().putAll(env);
        return pb.start();
    }

    static Result finish(Process p) throws Exception {
        byte[] out = p.getInputStream().readAllBytes();   // the process closes it when it exits
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("process " + p.pid() + " did not exit");
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    @Test
    void fourProcessesAgreeOnTheIdEvenWhenRanksStartBeforeRankZero() throws Exception {
        int n = 4;
        int port = freePort();
        long seed = 1234;
        List<Process> procs = new ArrayList<>(java.util.Collections.nCopies(n, (Process) null));
        try {
            for (int r : new int[] {3, 2}) {
                procs.set(r, start(BootstrapRankMain.class.getName(), rankEnv(r, n, port, 30_000, Map.of()), "" + seed));
            }
            Thread.sleep(2000);                                  // ranks 2 and 3 are retrying by now
            for (int r : new int[] {0, 1}) {
                procs.set(r, start(BootstrapRankMain.class.getName(), rankEnv(r, n, port, 30_000, Map.of()), "" + seed));
            }
            byte[] expected = new byte[128];
            new Random(seed).nextBytes(expected);
            String hex = HexFormat.of().formatHex(expected);
            for (int r = 0; r < n; r++) {
                Result res = finish(procs.get(r));
                assertThat(res.exit()).as("rank %d: %s", r, res.out()).isZero();
                String[] line = res.out().strip().split(" ");
                assertThat(line[0]).isEqualTo("ID");
                assertThat(line[1]).as("rank %d's id", r).isEqualTo(hex);
                if (r >= 2) assertThat(Long.parseLong(line[2])).as("rank %d waited for rank 0", r).isGreaterThan(1000);
            }
        } finally {
            for (Process p : procs) if (p != null) p.destroyForcibly();
        }
    }

    @Test
    void aLoneRankTimesOutWithAnExceptionNamingRankTimeoutRetriesAndReason() throws Exception {
        int port = freePort();
        Result res = finish(start(BootstrapRankMain.class.getName(), rankEnv(1, 2, port, 1500, Map.of()), "1"));
        assertThat(res.exit()).as(res.out()).isEqualTo(3);
        assertThat(res.out()).contains("ERROR ConnectFailedException").contains("rank 1")
                .contains("MLX_NCCL_TIMEOUT=1500").contains("retries").contains("refused");
    }

    @Test
    void aRankConfiguredOnlyByItsEnvironmentFindsTheStubLibrariesAndRunsEveryOpOnDeviceMemory() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Result res = finish(start(NcclRankMain.class.getName(), rankEnv(0, 1, freePort(), 5000, stubs.env())));
        assertThat(res.exit()).as(res.out()).isZero();
        assertThat(res.out()).contains("AVAILABLE true -").contains("OK group rank=0 size=1 device=0")
                .contains("OK all_sum [1.0, 2.0, 3.0, 4.0]").contains("OK all_gather [1.0, 2.0, 3.0, 4.0]")
                .contains("OK sum_scatter [1.0, 2.0, 3.0, 4.0]");
    }

    @Test
    void theGpuCheckProgramPassesAgainstTheStubLibraries() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Result res = finish(start(NcclCheck.class.getName(), stubs.env()));
        assertThat(res.exit()).as(res.out()).isZero();
        assertThat(res.out()).contains("ok   device all_sum     bfloat16").contains("ok   staged host ops    uint64")
                .contains("ok   unsupported dtype complex64 rejected").contains("nccl: ALL CHECKS PASSED")
                .doesNotContain("FAIL");
    }

    @Test
    void theGpuCheckProgramSaysWhyWhenTheLibrariesAreMissing() throws Exception {
        Result res = finish(start(NcclCheck.class.getName(), Map.of("JDIST_CUDART_LIBRARY", "/nonexistent/libcudart.so.12")));
        assertThat(res.exit()).as(res.out()).isEqualTo(2);
        assertThat(res.out()).contains("nccl: UNAVAILABLE").contains("/nonexistent/libcudart.so.12");
    }

    @Test
    void anInjectedNcclFailureIsAnExceptionInTheRankNotAProcessExit() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Map<String, String> env = new java.util.HashMap<>(stubs.env());
        env.put("JDIST_STUB_NCCL_FAIL", "ncclCommInitRankConfig");
        Result res = finish(start(NcclRankMain.class.getName(), rankEnv(0, 1, freePort(), 5000, env)));
        assertThat(res.exit()).as(res.out()).isEqualTo(3);
        assertThat(res.out()).contains("ERROR DistributedException").contains("ncclCommInitRankConfig")
                .contains("invalid usage").contains("injected failure");
    }

    /**
     * Two real processes meeting through the stub's file mode; rank 1 stops (SIGSTOP) or exits after a first
     * all_sum. Rank 0's next all_sum ends in ncclCommAbort and the typed error: DeadlineExceededException after
     * JDIST_TIMEOUT for a stopped peer, PeerLostException (NCCL's remote error) well before it for a dead one;
     * close() then returns within seconds, and no process is left.
     */
    @ParameterizedTest
    @CsvSource({"stop, 3s, DeadlineExceededException", "exit, 60s, PeerLostException"})
    void aStoppedOrDeadPeerEndsInAbortAndTheTypedErrorAndCloseReturnsWithinSeconds(String scenario, String timeout,
                                                                                String error) throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Path world = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "nccl-world-");
        int port = freePort();
        List<Process> procs = new ArrayList<>();
        try {
            for (int r = 0; r < 2; r++) {
                Map<String, String> env = new java.util.HashMap<>(stubs.env());
                env.put("JDIST_STUB_NCCL_WORLD_DIR", world.toString());
                env.put("JDIST_TIMEOUT", timeout);
                procs.add(start(NcclFaultMain.class.getName(), rankEnv(r, 2, port, 30_000, env), scenario));
            }
            Result rank0 = finish(procs.get(0));
            assertThat(rank0.exit()).as(rank0.out()).isEqualTo(3);
            assertThat(rank0.out()).contains("FIRST OK 0").doesNotContain("RETURNED")
                    .contains("ERROR " + error + " rank=0 op=all_sum float32[4] ");
            long after = Long.parseLong(rank0.out().replaceAll("(?s).*after=(\\d+).*", "$1"));
            long closed = Long.parseLong(rank0.out().replaceAll("(?s).*CLOSED (\\d+).*", "$1"));
            System.out.printf("[NcclProcessesIT] %s: rank 0 failed after %d ms with %s; close took %d ms%n",
                    scenario, after, error, closed);
            if (scenario.equals("stop")) {
                assertThat(rank0.out()).contains("deadline=PT3S").contains("did not complete within 3 s (JDIST_TIMEOUT)");
                assertThat(after).isBetween(3000L, 15_000L);
            } else {
                assertThat(rank0.out()).contains("rank 1 (pid").contains("has exited");
                assertThat(after).as("a dead peer is found long before the 60 s deadline").isLessThan(15_000L);
            }
            assertThat(closed).as("close() after a failure returns within seconds").isLessThan(5_000L);
            try (var files = Files.walk(world)) {            // the stub keeps each job in a subdirectory
                assertThat(files.anyMatch(f -> f.getFileName().toString().equals("abort.0"))).as("rank 0 called ncclCommAbort")
                        .isTrue();
            }
        } finally {
            for (Process p : procs) p.destroyForcibly();             // SIGKILL ends a stopped process too
            for (Process p : procs) {
                assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("process %d is gone", p.pid()).isTrue();
            }
        }
    }

    @Test
    void withoutLibrariesTheRankReportsWhyAndStrictInitIsAConfigError() throws Exception {
        Map<String, String> env = Map.of("JDIST_NCCL_LIBRARY", "/nonexistent/libnccl.so.2",
                "JDIST_CUDART_LIBRARY", "/nonexistent/libcudart.so.12");
        Result res = finish(start(NcclRankMain.class.getName(), rankEnv(0, 1, freePort(), 5000, env)));
        assertThat(res.exit()).as(res.out()).isEqualTo(3);
        assertThat(res.out()).contains("AVAILABLE false").contains("/nonexistent/libcudart.so.12")
                .contains("ERROR ConfigException");
    }
}
