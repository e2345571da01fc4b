package dev.jdist.nccl;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JavaCommand;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import java.util.Random;

import static dev.jdist.nccl.NcclTestSupport.rankEnv;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real processes on loopback: the docs/reference/collectives.md §6.3 bootstrap between separate JVMs (clients started before the
 * server retry; a lone client times out with an exception, not an exit), and a whole nccl rank
 * configured only through its environment, against the stub libraries.
 */
@Timeout(180)
class NcclProcessesIT {

    record Result(int exit, String out) {}

    @TempDir
    Path dir;

    private final ChildProcesses procs = new ChildProcesses();

    @AfterEach
    void endEveryProcess() {
        procs.close();
    }

    /** Starts {@code program} in a child JVM with {@code env}; returns its index in {@link #procs}. */
    private int start(Class<?> program, Map<String, String> env, String... args) throws IOException {
        procs.start(dir, program.getSimpleName(), JavaCommand.of(program, args), env);
        return procs.size() - 1;
    }

    /** The exit status and output of process i, which must end within 60 s. */
    private Result finish(int i) throws InterruptedException {
        int exit = procs.await(i, 60);
        if (exit == -1) throw new AssertionError("process " + procs.process(i).pid() + " did not exit:\n" + procs.output(i));
        return new Result(exit, procs.output(i));
    }

    @Test
    void fourProcessesAgreeOnTheIdEvenWhenRanksStartBeforeRankZero() throws Exception {
        int n = 4;
        int port = FreePorts.one();
        long seed = 1234;
        int[] index = new int[n];
        for (int r : new int[] {3, 2}) {
            index[r] = start(BootstrapRankProgram.class, rankEnv(r, n, port, 30_000, Map.of()), "" + seed);
        }
        Thread.sleep(2000);                                  // ranks 2 and 3 are retrying by now
        for (int r : new int[] {0, 1}) {
            index[r] = start(BootstrapRankProgram.class, rankEnv(r, n, port, 30_000, Map.of()), "" + seed);
        }
        byte[] expected = new byte[128];
        new Random(seed).nextBytes(expected);
        String hex = HexFormat.of().formatHex(expected);
        for (int r = 0; r < n; r++) {
            Result res = finish(index[r]);
            assertThat(res.exit()).as("rank %d: %s", r, res.out()).isZero();
            String[] line = res.out().strip().split(" ");
            assertThat(line[0]).isEqualTo("ID");
            assertThat(line[1]).as("rank %d's id", r).isEqualTo(hex);
            if (r >= 2) assertThat(Long.parseLong(line[2])).as("rank %d waited for rank 0", r).isGreaterThan(1000);
        }
    }

    @Test
    void aLoneRankTimesOutWithAnExceptionNamingRankTimeoutRetriesAndReason() throws Exception {
        int port = FreePorts.one();
        Result res = finish(start(BootstrapRankProgram.class, rankEnv(1, 2, port, 1500, Map.of()), "1"));
        assertThat(res.exit()).as(res.out()).isEqualTo(3);
        assertThat(res.out()).contains("ERROR ConnectFailedException").contains("rank 1")
                .contains("MLX_NCCL_TIMEOUT=1500").contains("retries").contains("refused");
    }

    @Test
    void aRankConfiguredOnlyByItsEnvironmentFindsTheStubLibrariesAndRunsEveryOpOnDeviceMemory() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Result res = finish(start(NcclRankProgram.class, rankEnv(0, 1, FreePorts.one(), 5000, stubs.env())));
        assertThat(res.exit()).as(res.out()).isZero();
        assertThat(res.out()).contains("AVAILABLE true -").contains("OK group rank=0 size=1 device=0")
                .contains("OK all_sum [1.0, 2.0, 3.0, 4.0]").contains("OK all_gather [1.0, 2.0, 3.0, 4.0]")
                .contains("OK sum_scatter [1.0, 2.0, 3.0, 4.0]");
    }

    @Test
    void theGpuCheckProgramPassesAgainstTheStubLibraries() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Result res = finish(start(NcclCheck.class, stubs.env()));
        assertThat(res.exit()).as(res.out()).isZero();
        assertThat(res.out()).contains("ok   device all_sum     bfloat16").contains("ok   staged host ops    uint64")
                .contains("ok   unsupported dtype complex64 rejected").contains("nccl: ALL CHECKS PASSED")
                .doesNotContain("FAIL");
    }

    @Test
    void theGpuCheckProgramSaysWhyWhenTheLibrariesAreMissing() throws Exception {
        Result res = finish(start(NcclCheck.class, Map.of("JDIST_CUDART_LIBRARY", "/nonexistent/libcudart.so.12")));
        assertThat(res.exit()).as(res.out()).isEqualTo(2);
        assertThat(res.out()).contains("nccl: UNAVAILABLE").contains("/nonexistent/libcudart.so.12");
    }

    @Test
    void anInjectedNcclFailureIsAnExceptionInTheRankNotAProcessExit() throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Map<String, String> env = new java.util.HashMap<>(stubs.env());
        env.put("JDIST_STUB_NCCL_FAIL", "ncclCommInitRankConfig");
        Result res = finish(start(NcclRankProgram.class, rankEnv(0, 1, FreePorts.one(), 5000, env)));
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
        Path world = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "nccl-world-");
        int[] index = startFaultPair(world, scenario, Map.of("JDIST_TIMEOUT", timeout));
        Result rank0 = finish(index[0]);
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
        procs.close();                                   // SIGKILL ends a stopped process too
        for (int r = 0; r < 2; r++) {
            assertThat(procs.process(index[r]).isAlive()).as("rank %d's process is gone", r).isFalse();
        }
    }

    /**
     * Between jdist ranks (a job token) the liveness watch runs beside NCCL: with JDIST_TIMEOUT unset (30 min) a stopped
     * peer still ends rank 0's all_sum within JDIST_HEARTBEAT, through ncclCommAbort, as PeerUnresponsiveException.
     */
    @Test
    void withAJobTokenTheLivenessWatchEndsTheWaitForAStoppedPeerWithinTheHeartbeat() throws Exception {
        Path world = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "nccl-world-");
        int[] index = startFaultPair(world, "stop", Map.of("JDIST_JOB_TOKEN", "nccl-liveness-test-token", "JDIST_HEARTBEAT", "2s"));
        Result rank0 = finish(index[0]);
        assertThat(rank0.exit()).as(rank0.out()).isEqualTo(3);
        assertThat(rank0.out()).contains("FIRST OK 0").doesNotContain("RETURNED")
                .contains("ERROR PeerUnresponsiveException rank=0 op=all_sum float32[4] ").contains("its process is stopped");
        long after = Long.parseLong(rank0.out().replaceAll("(?s).*after=(\\d+).*", "$1"));
        System.out.printf("[NcclProcessesIT] stop with the watch: rank 0 failed after %d ms%n", after);
        assertThat(after).as("found by the heartbeat (2 s), not the 30 min deadline").isLessThan(60_000L);
        try (var files = Files.walk(world)) {
            assertThat(files.anyMatch(f -> f.getFileName().toString().equals("abort.0"))).as("rank 0 called ncclCommAbort")
                    .isTrue();
        }
        procs.close();
    }

    /** Two NcclFaultProgram ranks against the stub libraries in {@code world}, with {@code extra} in their environment. */
    private int[] startFaultPair(Path world, String scenario, Map<String, String> extra) throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        int port = FreePorts.one();
        int[] index = new int[2];
        for (int r = 0; r < 2; r++) {
            Map<String, String> env = new java.util.HashMap<>(stubs.env());
            env.put("JDIST_STUB_NCCL_WORLD_DIR", world.toString());
            env.putAll(extra);
            index[r] = start(NcclFaultProgram.class, rankEnv(r, 2, port, 30_000, env), scenario);
        }
        return index;
    }

    /**
     * The operations MLX lacks across processes: n JVMs meet through the stub's file mode, so broadcast and the grouped
     * ncclSend/ncclRecv behind any-peer send/recv, batches, all_to_all(v), gather and scatter move bytes between
     * processes; every rank checks every value CollectiveChecks knows, on the world and on a split.
     */
    @ParameterizedTest(name = "{0} ranks")
    @org.junit.jupiter.params.provider.ValueSource(ints = {3, 4})
    void theOperationsMlxLacksGiveTheDocumentedBytesOnEveryRankAcrossProcesses(int n) throws Exception {
        NcclStubLibraries stubs = NcclStubLibraries.get();
        Path world = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "nccl-world-");
        int port = FreePorts.one();
        int[] index = new int[n];
        for (int r = 0; r < n; r++) {
            Map<String, String> env = new java.util.HashMap<>(stubs.env());
            env.put("JDIST_STUB_NCCL_WORLD_DIR", world.toString());
            env.put("JDIST_TIMEOUT", "120s");
            index[r] = start(NcclPeerOperationsProgram.class, rankEnv(r, n, port, 30_000, env));
        }
        for (int r = 0; r < n; r++) {
            int exit = procs.await(index[r], 150);
            String out = procs.output(index[r]);
            if (exit == -1) throw new AssertionError("rank " + r + " did not exit within 150 s:\n" + out);
            assertThat(exit).as("rank %d: %s", r, out).isZero();
            assertThat(out).contains("rank " + r + " of " + n + ": OK");
        }
    }

    @Test
    void withoutLibrariesTheRankReportsWhyAndStrictInitIsAConfigError() throws Exception {
        Map<String, String> env = Map.of("JDIST_NCCL_LIBRARY", "/nonexistent/libnccl.so.2",
                "JDIST_CUDART_LIBRARY", "/nonexistent/libcudart.so.12");
        Result res = finish(start(NcclRankProgram.class, rankEnv(0, 1, FreePorts.one(), 5000, env)));
        assertThat(res.exit()).as(res.out()).isEqualTo(3);
        assertThat(res.out()).contains("AVAILABLE false").contains("/nonexistent/libcudart.so.12")
                .contains("ERROR ConfigException");
    }
}
