package dev.jdist.ring;

import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jdist ranks started with MLX's variables only ({@code MLX_RANK}, {@code MLX_HOSTFILE}; no job token, no
 * {@code JDIST_TIMEOUT}), as MLX's docs start jobs under a scheduler (docs/reliability.md "Ways of starting a job"). The
 * member probe (docs/reference/collectives.md §3.13) finds every member jdist, so the group gets the watch, the mismatch
 * check and the peer mesh; a rank with {@code JDIST_MEMBER_PROBE=off} never answers the probe, as an MLX process does,
 * which stands in for an MLX peer: then the group runs as MLX's ring, says so, and waits as long as MLX would.
 */
@Timeout(300)
class MlxVariablesIT {
    @TempDir
    Path dir;

    /** Only MLX's variables, and what each test adds. */
    private static Map<String, String> env(String... kv) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) env.put(kv[i], kv[i + 1]);
        return env;
    }

    private RankProcesses start(Path hf, int n, Map<String, String> env, Map<String, String> lastRankEnv, String... args) throws Exception {
        RankProcesses ranks = new RankProcesses();
        for (int r = 0; r < n; r++) {
            Map<String, String> e = new HashMap<>(env);
            if (r == n - 1) e.putAll(lastRankEnv);
            ranks.start(dir, r, hf, LivenessProgram.class, e, args);
        }
        return ranks;
    }

    /** (a) All jdist: the probe says so, the mesh forms, and a SIGSTOPped rank is named within the heartbeat bound. */
    @Test
    void allJdistRanksGetTheWatchAndAStoppedRankIsFoundWithinTheHeartbeatBound() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 3, 1);
        try (RankProcesses ranks = start(hf, 3, env("JDIST_HEARTBEAT", "2s"), Map.of(), "loop", "100000000", "240")) {
            ranks.awaitLooping(3);
            for (int r = 0; r < 3; r++) {
                ranks.awaitOutput(r, "progress deadline", 60);
                assertThat(ranks.output(r)).as("rank %d formed the peer mesh", r).contains("looping (mesh connections:")
                        .contains("progress deadline 1800 s").doesNotContain("may hold MLX peers");
            }
            long pid = ranks.process(1).pid();
            Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(pid)).inheritIO().start();
            assertThat(stop.waitFor(10, TimeUnit.SECONDS)).isTrue();
            try {
                for (int r : new int[] {0, 2}) {
                    int code = ranks.await(r, 60);   // JDIST_TIMEOUT is 30 min: only the watch ends it this soon
                    String out = ranks.output(r);
                    assertThat(code).as("rank %d: 8 PeerUnresponsive; output:%n%s", r, out).isEqualTo(8);
                    assertThat(out).contains("FAILED PeerUnresponsiveException peer=1 ").contains("state=STOPPED").contains("pid " + pid);
                }
            } finally {
                ranks.process(1).destroyForcibly();
            }
        }
    }

    /**
     * (b) A healthy rank that computes between collectives is waited for: all jdist, a 4 s gap against a 1 s heartbeat;
     * and with a stand-in MLX peer the group reports MLX's wait (30 minutes) once connected, and says what is off.
     */
    @Test
    void aComputeGapIsWaitedForAndAGroupWithMlxPeersWaitsThirtyMinutes() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = start(hf, 2, env("JDIST_HEARTBEAT", "1s"), Map.of(), "loop", "8", "240", "1", "4", "3")) {
            for (int r = 0; r < 2; r++) {
                int code = ranks.await(r, 120);
                assertThat(code).as("rank %d; output:%n%s", r, ranks.allOutputs()).isZero();
            }
            assertThat(ranks.output(1)).contains("pausing 4 s");
        }
        Path hf2 = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = start(hf2, 2, env(), Map.of(MemberProbe.VARIABLE, "off"), "loop", "5", "240")) {
            for (int r = 0; r < 2; r++) {
                int code = ranks.await(r, 120);
                String out = ranks.output(r);
                assertThat(code).as("rank %d; output:%n%s", r, out).isZero();
                assertThat(out).contains("progress deadline 1800 s").contains("rank " + r + " looping\n")
                        .contains("jdist: rank " + r + ": this ring group may hold MLX peers (");
            }
            assertThat(ranks.output(0)).contains("rank 1 did not answer jdist's UDP probe");
        }
    }

    /** (c) JDIST_DEBUG=detail: all jdist, the mismatch is caught before data moves; with an MLX peer possible, refused at init. */
    @Test
    void detailChecksAllJdistRanksAndIsRefusedWithMlxPeers() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = start(hf, 2, env("JDIST_DEBUG", "detail"), Map.of(), "mismatch", "op", "1")) {
            for (int r = 0; r < 2; r++) {
                int code = ranks.await(r, 90);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 9 CollectiveMismatch; output:%n%s", r, out).isEqualTo(9);
                assertThat(out).contains("rank 1 is in all_sum float32[1024] #1").contains("rank 0 is in all_gather int32[12] #1");
            }
        }
        Path hf2 = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = start(hf2, 2, env("JDIST_DEBUG", "detail"), Map.of(MemberProbe.VARIABLE, "off"), "mismatch", "op", "1")) {
            for (int r = 0; r < 2; r++) {
                int code = ranks.await(r, 90);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 6 ConfigException at init; output:%n%s", r, out).isEqualTo(6);
                assertThat(out).contains("JDIST_DEBUG=detail compares every operation").contains("may hold MLX peers")
                        .doesNotContain("looping");
            }
        }
    }

    /**
     * (e) A lost peer is named with its own hostfile address, also on a connection this rank accepted (RingConnectionNamesTest
     * checks each connection's name exactly): here every rank and address a survivor's error names belong together.
     */
    @Test
    void aLostPeerIsNamedWithItsOwnAddress() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 3, 1);
        String[] address = addresses(hf, 3);
        try (RankProcesses ranks = start(hf, 3, env(MemberProbe.VARIABLE, "off"), Map.of(), "loop", "100000000", "240")) {
            ranks.awaitLooping(3);
            ranks.process(2).destroyForcibly();   // SIGKILL: rank 0 accepted its left[0] connection from rank 2
            assertThat(ranks.process(2).waitFor(20, TimeUnit.SECONDS)).isTrue();
            for (int r : new int[] {0, 1}) {
                int code = ranks.await(r, 60);
                String out = ranks.output(r);
                assertThat(code).as("rank %d: 3 PeerLost; output:%n%s", r, out).isEqualTo(3);
                Matcher named = Pattern.compile("rank (\\d) \\(([0-9.]+:[0-9]+), connection").matcher(out);
                int seen = 0;
                while (named.find()) {
                    seen++;
                    assertThat(named.group(2)).as("rank %d's output names rank %s by its address:%n%s", r, named.group(1), out)
                            .isEqualTo(address[Integer.parseInt(named.group(1))]);
                }
                assertThat(seen).as(out).isPositive();
            }
        }
    }

    /** (d) A lone rank whose peer never starts fails in init within the set-up bound (30 s, MLX's connect retries), not 120 s. */
    @LongTest
    @Test
    void aLoneRankFailsWithinTheShortSetUpBound() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        try (RankProcesses ranks = new RankProcesses()) {
            long t0 = System.nanoTime();
            ranks.start(dir, 0, hf, LivenessProgram.class, env(), "loop", "10", "240");
            int code = ranks.await(0, 100);
            double seconds = (System.nanoTime() - t0) / 1e9;
            String out = ranks.output(0);
            assertThat(code).as(out).isEqualTo(5);
            assertThat(out).contains("ConnectFailedException").contains("rank 1").contains("30 s");
            assertThat(seconds).as("failed after the 30 s set-up bound, well before the old 120 s").isBetween(29.0, 100.0);
        }
    }

    /** The hostfile's address texts, rank by rank (one address each). */
    private static String[] addresses(Path hf, int n) throws Exception {
        Matcher m = Pattern.compile("\"([0-9.]+:[0-9]+)\"").matcher(Files.readString(hf));
        String[] out = new String[n];
        for (int q = 0; q < n; q++) {
            assertThat(m.find()).isTrue();
            out[q] = m.group(1);
        }
        return out;
    }
}
