package dev.jdist.spark;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.spark.examples.SparkDataParallel;
import org.apache.spark.SparkException;
import org.apache.spark.SparkExecutorInfo;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.data.Offset.offset;

/**
 * jdist groups across separate executor JVMs: Spark's local cluster (a standalone master and two workers in this
 * JVM, each worker starting its executor as its own JVM with 2 task slots), four barrier tasks, two per executor.
 * One cluster for the whole class (starting one costs seconds on two cores).
 */
@Timeout(240)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class JdistSparkClusterIT {

    static final int TASKS = 4;
    static final Map<String, String> SETTINGS = Map.of("JDIST_TIMEOUT", "60");

    static JavaSparkContext spark;
    static Path outcomes;
    /** Every executor process a task ran in; all must be gone once the cluster stops. */
    static final Set<Long> EXECUTOR_PIDS = ConcurrentHashMap.newKeySet();

    @BeforeAll
    static void start() throws IOException {
        outcomes = Files.createTempDirectory("jdist-spark-it-");
        spark = new JavaSparkContext(SparkTestSupport.clusterConf(2, 2, "jdist-spark cluster test"));
        awaitIdleExecutors(2);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (spark != null) spark.stop();
        } finally {
            try (Stream<Path> files = Files.list(outcomes)) {
                for (Path p : files.toList()) Files.delete(p);
            }
            Files.delete(outcomes);
        }
        // No executor left behind: every executor JVM a task ran in has exited.
        long deadline = System.nanoTime() + 60_000_000_000L;
        List<Long> alive = new ArrayList<>(EXECUTOR_PIDS);
        while (!alive.isEmpty() && System.nanoTime() < deadline) {
            alive.removeIf(pid -> ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true));
            Thread.sleep(200);
        }
        assertThat(alive).as("executor JVMs still running after the cluster stopped").isEmpty();
    }

    @Test
    @Order(1)
    void fourTasksOnTwoExecutorJvmsAllSumAndCheckEveryElement() {
        int n = 1 << 20;   // 4 MiB of float32 per task: many ring chunks
        List<long[]> results = JdistSpark.run(spark, TASKS, SETTINGS, group -> {
            float[] mine = new float[n];
            for (int i = 0; i < n; i++) mine[i] = group.rank() + (i % 1000);
            float[] sum = group.allSum(Array.fromFloats(mine, n)).toFloatArray();
            long wrong = 0;
            for (int i = 0; i < n; i++) if (sum[i] != 6 + 4 * (i % 1000)) wrong++;   // ranks 0..3 add 6
            return new long[] {group.rank(), group.size(), wrong, ProcessHandle.current().pid()};
        });
        assertThat(results).hasSize(TASKS);
        for (int r = 0; r < TASKS; r++) {
            long[] got = results.get(r);
            assertThat(got[0]).isEqualTo(r);
            assertThat(got[1]).isEqualTo(TASKS);
            assertThat(got[2]).as("wrong elements on rank %d", r).isZero();
        }
        List<Long> pids = results.stream().map(x -> x[3]).distinct().toList();
        EXECUTOR_PIDS.addAll(pids);
        assertThat(pids).as("executor JVMs").hasSize(2).doesNotContain(ProcessHandle.current().pid());
    }

    @Test
    @Order(2)
    void dataParallelTrainingOverAnRddMatchesTheOnePartitionRun() {
        List<SparkDataParallel.Result> four = SparkDataParallel.train(spark, TASKS, SETTINGS);
        List<SparkDataParallel.Result> one = SparkDataParallel.train(spark, 1, SETTINGS);
        assertThat(four).hasSize(TASKS);
        assertThat(one).hasSize(1);
        SparkDataParallel.Result r0 = four.getFirst();
        for (int r = 0; r < TASKS; r++) {
            SparkDataParallel.Result got = four.get(r);
            assertThat(got.rank()).isEqualTo(r);
            assertThat(got.size()).isEqualTo(TASKS);
            assertThat(got.rows()).isEqualTo(SparkDataParallel.EXAMPLES / TASKS);
            assertThat(got.weights()).as("rank %d's weights equal rank 0's, bit for bit", r).isEqualTo(r0.weights());
            assertThat(got.finalLoss()).isEqualTo(r0.finalLoss());
        }
        SparkDataParallel.Result single = one.getFirst();
        assertThat(single.size()).isEqualTo(1);
        assertThat(single.rows()).isEqualTo(SparkDataParallel.EXAMPLES);
        double diff = SparkDataParallel.maxDifference(r0.weights(), single.weights());
        System.out.printf("training: 4 tasks loss %.8f (initial %.8f), 1 task loss %.8f, largest weight difference %.3g%n",
                r0.finalLoss(), r0.initialLoss(), single.finalLoss(), diff);
        assertThat(r0.finalLoss()).isLessThan(r0.initialLoss() / 10);
        assertThat(diff).as("largest weight difference to the 1-partition run").isLessThan(1e-4);
        assertThat(r0.finalLoss()).isCloseTo(single.finalLoss(), offset(1e-6));
    }

    @Test
    @Order(3)
    void aTaskThatThrowsMidJobFailsTheStageAndItsPeersGetPeerLost() throws Exception {
        String dir = outcomes.toString();
        assertThatThrownBy(() -> JdistSpark.run(spark, TASKS, SETTINGS, group -> {
            group.allSum(Array.of(1f));                     // the ring is formed and in step
            if (group.rank() == 3) throw new IllegalStateException("rank 3 fails on purpose");
            return secondCollective(dir, "throw", group);
        })).isInstanceOf(SparkException.class)
                // the first failure to reach the driver names the stage's failure: rank 3's own, or a peer's jdist error
                .satisfies(e -> assertThat(e.getMessage()).containsAnyOf("rank 3 fails on purpose", PeerLostException.class.getName()));
        List<String[]> seen = outcomesOf("throw", 3);
        for (String[] o : seen) {
            assertThat(o[2]).as("rank %s's error: %s", o[0], o[4]).isEqualTo(PeerLostException.class.getName());
        }
        awaitIdleExecutors(2);
        fourTasksOnTwoExecutorJvmsAllSumAndCheckEveryElement();   // the cluster still works
    }

    @Test
    @Order(4)
    void aKilledExecutorJvmFailsTheStageAndThePeersOnTheOtherExecutorGetPeerLost() throws Exception {
        String dir = outcomes.toString();
        long started = System.nanoTime();
        Throwable failure = catchThrowable(() -> JdistSpark.run(spark, TASKS, SETTINGS, group -> {
            // rank 3 halts as soon as its own first all_sum returns; a peer may still be finishing that one, so its
            // PeerLost can come from either collective and is recorded from both
            recordingFailure(dir, "kill", group, () -> group.allSum(Array.of(1f)));
            if (group.rank() == 3) {
                record(dir, "kill", group.rank(), "halted", 0, "");
                Runtime.getRuntime().halt(137);           // the executor JVM dies at once, like kill -9
            }
            return secondCollective(dir, "kill", group);
        }));
        assertThat(failure).isInstanceOf(SparkException.class);
        System.out.printf("killed executor: job failed after %.1f s: %s%n", (System.nanoTime() - started) / 1e9,
                failure.getMessage().lines().limit(2).toList());
        long haltedPid = Long.parseLong(Files.readString(outcomes.resolve("kill-3")).split("\\|")[1]);
        EXECUTOR_PIDS.add(haltedPid);
        // Ranks in the other executor JVM survived the kill; each must have failed with jdist's typed error.
        // the driver learns of the failed stage before the surviving tasks have written their outcome: wait (bounded)
        List<String[]> survivors = new ArrayList<>();
        long until = System.nanoTime() + 30_000_000_000L;
        while (true) {
            survivors.clear();
            for (int r = 0; r < 3; r++) {
                Path p = outcomes.resolve("kill-" + r);
                if (Files.exists(p)) {
                    String[] o = Files.readString(p).split("\\|", 5);
                    if (o.length == 5 && Long.parseLong(o[1]) != haltedPid) survivors.add(o);
                }
            }
            if (survivors.size() >= 2 || System.nanoTime() > until) break;
            sleep(100);
        }
        assertThat(survivors).as("ranks outside the killed executor").hasSize(2);
        for (String[] o : survivors) {
            assertThat(o[2]).as("rank %s's error: %s", o[0], o[4]).isEqualTo(PeerLostException.class.getName());
            System.out.printf("killed executor: rank %s failed after %s ms: %s%n", o[0], o[3], o[4]);
        }
        awaitIdleExecutors(2);                           // the worker starts a new executor for the lost one
        fourTasksOnTwoExecutorJvmsAllSumAndCheckEveryElement();
    }

    @Test
    @Order(5)
    void aStoppedExecutorJvmIsFoundByTheWatchWithinTheHeartbeatBound() throws Exception {
        String dir = outcomes.toString();
        // the defaults but a shorter heartbeat (the documented knob): no JDIST_TIMEOUT, whose default is 120 s without the
        // watch (the group formed through a hostfile before) and 30 min with it
        Map<String, String> settings = Map.of("JDIST_HEARTBEAT", "3s");
        long started = System.nanoTime();
        Throwable failure = catchThrowable(() -> JdistSpark.run(spark, TASKS, settings, group -> {
            recordingFailure(dir, "stop", group, () -> group.allSum(Array.of(1f)));
            if (group.rank() == 3) {
                record(dir, "stop", group.rank(), "stopping", 0, "");
                // the executor JVM stops (both of its tasks): no byte, no EOF, only silence; the test continues it
                new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            }
            return secondCollective(dir, "stop", group);
        }));
        long stoppedPid = Long.parseLong(Files.readString(outcomes.resolve("stop-3")).split("\\|")[1]);
        EXECUTOR_PIDS.add(stoppedPid);
        try {
            assertThat(failure).isInstanceOf(SparkException.class);
            System.out.printf("stopped executor: job failed after %.1f s: %s%n", (System.nanoTime() - started) / 1e9,
                    failure.getMessage().lines().limit(2).toList());
            List<String[]> survivors = new ArrayList<>();
            long until = System.nanoTime() + 30_000_000_000L;
            while (true) {
                survivors.clear();
                for (int r = 0; r < TASKS; r++) {
                    Path p = outcomes.resolve("stop-" + r);
                    if (Files.exists(p)) {
                        String[] o = Files.readString(p).split("\\|", 5);
                        if (o.length == 5 && Long.parseLong(o[1]) != stoppedPid) survivors.add(o);
                    }
                }
                if (survivors.size() >= 2 || System.nanoTime() > until) break;
                sleep(100);
            }
            assertThat(survivors).as("ranks outside the stopped executor").hasSize(2);
            for (String[] o : survivors) {
                System.out.printf("stopped executor: rank %s failed after %s ms: %s%n", o[0], o[3], o[4]);
                // the watch's verdict (or a peer's, passed on): never the progress deadline
                assertThat(o[2]).as("rank %s's error: %s", o[0], o[4])
                        .isIn(PeerUnresponsiveException.class.getName(), PeerLostException.class.getName());
                // 8 of 10 heartbeat intervals of silence (2.4 s); far below the 120 s a group without the watch waited
                assertThat(Long.parseLong(o[3])).as("ms until rank %s failed", o[0]).isLessThan(60_000);
            }
            assertThat(survivors).as("a survivor names the stopped process").anySatisfy(o -> {
                assertThat(o[2]).isEqualTo(PeerUnresponsiveException.class.getName());
                assertThat(o[4]).contains("stopped");
            });
        } finally {
            new ProcessBuilder("kill", "-CONT", Long.toString(stoppedPid)).start().waitFor();
        }
        awaitIdleExecutors(2);
        fourTasksOnTwoExecutorJvmsAllSumAndCheckEveryElement();
    }

    /** A 4 MiB all_sum whose outcome (done, or the jdist error and how long it took to come) goes to a file. */
    static long secondCollective(String dir, String scenario, Group group) {
        long start = System.nanoTime();
        recordingFailure(dir, scenario, group, () -> group.allSum(Array.zeros(DType.FLOAT32, 1 << 20)));
        record(dir, scenario, group.rank(), "done", (System.nanoTime() - start) / 1_000_000, "");
        return 0;
    }

    /** Runs a collective; if it fails with jdist's error, the error and how long it took to come go to the outcome file. */
    static void recordingFailure(String dir, String scenario, Group group, Runnable collective) {
        long start = System.nanoTime();
        try {
            collective.run();
        } catch (DistributedException e) {
            record(dir, scenario, group.rank(), e.getClass().getName(), (System.nanoTime() - start) / 1_000_000, e.getMessage());
            throw e;
        }
    }

    static void record(String dir, String scenario, int rank, String outcome, long millis, String message) {
        try {
            Files.writeString(Path.of(dir, scenario + "-" + rank), rank + "|" + ProcessHandle.current().pid() + "|" + outcome
                    + "|" + millis + "|" + message.replace('\n', ' '));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The outcome files of ranks 0..ranks-1 of a scenario: [rank, pid, outcome, millis, message]. */
    static List<String[]> outcomesOf(String scenario, int ranks) throws IOException {
        List<String[]> all = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            Path p = outcomes.resolve(scenario + "-" + r);
            // the driver learns of the failed stage before the peers' tasks have written their outcome: wait (bounded)
            long until = System.nanoTime() + 30_000_000_000L;
            while (!Files.exists(p) && System.nanoTime() < until) sleep(100);
            assertThat(p).as("rank %d recorded its outcome", r).exists();
            all.add(Files.readString(p).split("\\|", 5));
        }
        return all;
    }

    /** Waits (bounded) until {@code count} executors are registered and none runs a task: nothing hangs. */
    static void awaitIdleExecutors(int count) {
        SparkTestSupport.awaitIdleExecutors(spark, count);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
