package dev.jdist.rendezvous;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JavaCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Ranks that disagree, as separate JVMs running {@link ClusterCheckProgram}: a wrong world size, a duplicate rank, a
 * different job token, a missing rank, a different hostfile. Every process must fail within the deadline with the one
 * error that names the ranks and both values; none may hang or start computing.
 */
class ClusterAgreementIT {
    static final int N = 4;
    static final long LIMIT_SECONDS = 120;

    @TempDir
    Path dir;

    private static Map<String, String> torchrun(int rank, int size, int port, String... extra) {
        Map<String, String> m = new HashMap<>(Map.of("RANK", "" + rank, "WORLD_SIZE", "" + size, "MASTER_ADDR", "127.0.0.1",
                "MASTER_PORT", "" + port, "JDIST_TIMEOUT", "60"));
        for (int i = 0; i < extra.length; i += 2) m.put(extra[i], extra[i + 1]);
        return m;
    }

    /** Starts one process per entry of {@code envs}; all must exit with 3 within the limit; returns their outputs. */
    private List<String> allFail(List<Map<String, String>> envs) throws Exception {
        try (ChildProcesses job = new ChildProcesses()) {
            for (int i = 0; i < envs.size(); i++) {
                job.start(dir, "p" + i, JavaCommand.of(ClusterCheckProgram.class), envs.get(i));
            }
            List<String> outs = new ArrayList<>();
            for (int i = 0; i < envs.size(); i++) {
                int code = job.await(i, LIMIT_SECONDS);
                assertThat(code).as("exit code of process %d (3 = init failed); outputs:%n%s", i, job.allOutputs()).isEqualTo(3);
                outs.add(job.output(i));
            }
            return outs;
        }
    }

    private static List<Map<String, String>> ranks(int n, IntFunction<Map<String, String>> envOf) {
        List<Map<String, String>> l = new ArrayList<>();
        for (int r = 0; r < n; r++) l.add(envOf.apply(r));
        return l;
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void aRankStartedWithAnotherWorldSize() throws Exception {
        int port = FreePorts.one();
        // rank 3 believes the job has 2 processes: it cannot be rank 3 of 2, and it tells the others so
        List<String> outs = allFail(ranks(N, r -> torchrun(r, r == 3 ? 2 : N, port)));
        for (String out : outs) {
            assertThat(out).containsPattern("FAILED: ConfigException: rank 3 \\([^)]*\\) was started with WORLD_SIZE=2, the others with 4");
        }
        assertThat(outs.stream().map(o -> o.substring(o.indexOf("FAILED"))).distinct()).as("one error on every rank").hasSize(1);
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void twoProcessesClaimingOneRankFailEveryRankAtOnce() throws Exception {
        int port = FreePorts.one();
        // the case, with the default settings (no JDIST_TIMEOUT, no rendezvous deadline): RANK=0, 1, 1 of 3, none 2
        List<Map<String, String>> envs = new ArrayList<>();
        for (int r : new int[] {0, 1, 1}) {
            envs.add(Map.of("RANK", "" + r, "WORLD_SIZE", "3", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port));
        }
        long t0 = System.nanoTime();
        List<String> outs = allFail(envs);
        long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
        for (String out : outs) {
            assertThat(out).contains("FAILED: ConfigException: two processes claim rank 1: ")
                    .containsPattern("claim rank 1: \\S+ \\(pid \\d+, 127\\.0\\.0\\.1\\) and \\S+ \\(pid \\d+, 127\\.0\\.0\\.1\\)")
                    .contains("check RANK on both")
                    .contains("also: rank 2 had not joined when rank 0 judged, ").contains("(rank 2: never connected)");
        }
        assertThat(outs.stream().map(o -> o.substring(o.indexOf("FAILED"))).distinct()).as("one error on every rank").hasSize(1);
        // not the 120 s rendezvous deadline: rank 0 judges as soon as the second claim arrives (JVM start-up included)
        assertThat(seconds).as("seconds until every process failed").isLessThan(60);
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void aRankWithAnotherJobToken() throws Exception {
        int port = FreePorts.one();
        List<String> outs = allFail(ranks(N, r -> torchrun(r, N, port, "JDIST_JOB_TOKEN", r == 2 ? "another-job" : "this-job",
                "JDIST_RENDEZVOUS_TIMEOUT", "8")));
        assertThat(outs.get(2)).contains("FAILED: ConfigException: rank 2: the rendezvous store at 127.0.0.1:" + port)
                .contains("proved a different job token");
        for (int r : new int[] {0, 1, 3}) {
            assertThat(outs.get(r)).contains("FAILED: DeadlineExceededException: expected 4 ranks; 3 joined within 8 s; missing "
                    + "rank 2 (rank 2: at ").contains(" s, a connection from 127.0.0.1 claiming rank 2 left after the store's token "
                    + "proof: it has a different JDIST_JOB_TOKEN");
        }
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void aRankThatNeverComes() throws Exception {
        int port = FreePorts.one();
        List<Map<String, String>> envs = new ArrayList<>();
        for (int r : new int[] {0, 1, 3}) envs.add(torchrun(r, N, port, "JDIST_RENDEZVOUS_TIMEOUT", "15"));
        List<String> outs = allFail(envs);
        for (String out : outs) {
            assertThat(out).contains("FAILED: DeadlineExceededException: expected 4 ranks; 3 joined within 15 s; missing rank 2 "
                    + "(rank 2: never connected)");
        }
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void aDifferentHostfileInAJobWithAToken() throws Exception {
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < N; i++) ports.add(FreePorts.one());
        Path a = hostfile("a.json", ports);
        List<Integer> other = new ArrayList<>(ports);
        other.set(0, other.get(0) == 65535 ? 1024 : other.get(0) + 1);   // an entry rank 2 does not use itself
        Path b = hostfile("b.json", other);
        List<String> outs = allFail(ranks(N, r -> Map.of("MLX_RANK", "" + r, "MLX_HOSTFILE", (r == 2 ? b : a).toString(),
                "JDIST_JOB_TOKEN", "this-job", "JDIST_TIMEOUT", "60")));
        for (String out : outs) {
            assertThat(out).containsPattern("FAILED: ConfigException: rank 2 \\([^)]*\\) was started with hostfile \\S*b\\.json "
                    + "\\(sha256 [0-9a-f]{12}\\), the others with hostfile \\S*a\\.json \\(sha256 [0-9a-f]{12}\\)");
        }
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void aHostfileJobAgreesWithATokenAndWithoutOneThroughTheMemberProbe() throws Exception {
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < N; i++) ports.add(FreePorts.one());
        Path a = hostfile("ok.json", ports);
        for (boolean token : new boolean[] {true, false}) {
            try (ChildProcesses job = new ChildProcesses()) {
                for (int r = 0; r < N; r++) {
                    Map<String, String> env = new HashMap<>(Map.of("MLX_RANK", "" + r, "MLX_HOSTFILE", a.toString(), "JDIST_TIMEOUT", "60"));
                    if (token) env.put("JDIST_JOB_TOKEN", "this-job");
                    job.start(dir, "rank" + r, JavaCommand.of(ClusterCheckProgram.class), env);
                }
                for (int r = 0; r < N; r++) {
                    assertThat(job.await(r, LIMIT_SECONDS)).as("rank %d; outputs:%n%s", r, job.allOutputs()).isZero();
                    // without a token the member probe (collectives.md §3.13) finds every rank jdist: the same agreement
                    assertThat(job.output(r)).contains("rank " + r + " of " + N + ": OK (backend ring, source mlx-variables)");
                }
            }
        }
    }

    private Path hostfile(String name, List<Integer> ports) throws IOException {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < ports.size(); i++) sb.append(i == 0 ? "" : ", ").append("[\"127.0.0.1:").append(ports.get(i)).append("\"]");
        Path p = dir.resolve(name);
        Files.writeString(p, sb.append("]\n").toString());
        return p;
    }
}
