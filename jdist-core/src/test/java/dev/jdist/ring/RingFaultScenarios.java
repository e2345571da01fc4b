package dev.jdist.ring;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The fault scenarios every ring transport must pass, run with real JVMs ({@link RingFaultIT}, {@link ShmFaultIT}). */
final class RingFaultScenarios {

    /** A check on the job's processes at a point of a scenario (e.g. that no shared-memory file is left). */
    @FunctionalInterface
    interface Check {
        void on(RankProcesses ranks) throws Exception;
    }

    private RingFaultScenarios() {}

    /** The ring's own failure detection, as with MLX peers possible: no member probe, so no watch (LivenessIT has that). */
    private static Map<String, String> env(String timeoutSeconds, Map<String, String> extraEnv) {
        Map<String, String> env = new HashMap<>(extraEnv);
        env.put("JDIST_TIMEOUT", timeoutSeconds);
        env.put(MemberProbe.VARIABLE, "off");
        return env;
    }

    /**
     * SIGKILL rank 2 of 4 in the middle of an all_sum loop: ranks 0, 1 and 3 exit with PeerLost (status 3)
     * naming themselves and an address, and a direct neighbour names rank 2. {@code check} runs once every
     * rank loops and again at the end.
     */
    static void killedRankFailsEveryOther(Path dir, int k, Map<String, String> extraEnv, Check check) throws Exception {
        int n = 4;
        Path hf = RingTestSupport.hostfile(dir, n, k);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                ranks.start(dir, r, hf, RingLoopProgram.class, env("30", extraEnv), "100000000", "240");
            }
            ranks.awaitLooping(n);
            check.on(ranks);
            long pid = ranks.process(2).pid();
            ranks.process(2).destroyForcibly();   // SIGKILL to the one process we chose, by its handle
            assertThat(ranks.process(2).waitFor(20, TimeUnit.SECONDS)).as("pid %d ended", pid).isTrue();
            for (int r : new int[] {0, 1, 3}) {
                int code = ranks.await(r, 45);   // well within the 30 s deadline plus JVM exit
                String out = ranks.output(r);
                assertThat(code).as("rank %d exit code (3 = PeerLost); output:%n%s", r, out).isEqualTo(3);
                assertThat(out).contains("FAILED PeerLostException").contains("rank " + r).contains("127.0.0.1:");
            }
            // a direct neighbour names the dead rank (the other may hear of it first through the ring)
            assertThat(ranks.output(1) + ranks.output(3)).contains("rank 2 (");
            check.on(ranks);
        }
    }

    /**
     * SIGSTOP rank 1 of 3 mid-loop with JDIST_TIMEOUT=3: ranks 0 and 2 fail (PeerLost or DeadlineExceeded),
     * at least one with DeadlineExceeded naming JDIST_TIMEOUT and rank 1.
     */
    static void stoppedRankFailsTheOthersAfterTheDeadline(Path dir, Map<String, String> extraEnv) throws Exception {
        int n = 3;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            for (int r = 0; r < n; r++) {
                ranks.start(dir, r, hf, RingLoopProgram.class, env("3", extraEnv), "100000000", "240");
            }
            ranks.awaitLooping(n);
            long pid = ranks.process(1).pid();
            Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(pid)).inheritIO().start();
            assertThat(stop.waitFor(10, TimeUnit.SECONDS)).isTrue();
            try {
                int c0 = ranks.await(0, 40);
                int c2 = ranks.await(2, 40);
                String all = ranks.allOutputs();
                assertThat(c0).as(all).isIn(3, 4);
                assertThat(c2).as(all).isIn(3, 4);
                assertThat(c0 == 4 || c2 == 4).as("one neighbour of the stopped rank hit the deadline:%n%s", all).isTrue();
                assertThat(all).contains("DeadlineExceededException").contains("JDIST_TIMEOUT").contains("rank 1 (");
            } finally {
                ranks.process(1).destroyForcibly();   // SIGKILL also ends a stopped process
            }
        }
    }
}
