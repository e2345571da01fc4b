package dev.jdist.spark;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * jdist groups in Spark's local[4] mode: four barrier tasks in this JVM, each with its own ring group (several groups
 * per JVM, which Distributed.init's one-group-per-backend cache could not give).
 */
@Timeout(120)
class JdistSparkLocalTest {

    static JavaSparkContext spark;

    /** Groups the tasks formed, seen here because local mode runs the tasks in this JVM. */
    static final List<Object[]> SEEN = Collections.synchronizedList(new ArrayList<>());

    @BeforeAll
    static void start() {
        spark = new JavaSparkContext(SparkTestSupport.conf("local[4]", "jdist-spark local test"));
    }

    @AfterAll
    static void stop() {
        if (spark != null) spark.stop();
    }

    @Test
    void fourTasksAllSumAndEveryTaskHoldsTheSum() {
        List<float[]> results = JdistSpark.run(spark, 4, Map.of("JDIST_TIMEOUT", "30"), group -> {
            float[] mine = new float[100_000];
            for (int i = 0; i < mine.length; i++) mine[i] = group.rank() * 100_000 + i;
            float[] sum = group.allSum(Array.fromFloats(mine, mine.length)).toFloatArray();
            int wrong = 0;
            for (int i = 0; i < sum.length; i++) if (sum[i] != 600_000f + 4f * i) wrong++;   // sum over q of (q*100000 + i)
            return new float[] {group.rank(), group.size(), wrong, sum[12_345]};
        });
        assertThat(results).hasSize(4);
        for (int r = 0; r < 4; r++) assertThat(results.get(r)).containsExactly(r, 4, 0, 600_000f + 4 * 12_345);
    }

    @Test
    void theGroupHasTheJobTableSoTheWatchAndThePeerMeshRun() {
        // formed through Distributed.connect: the table, the watch, and broadcast/barrier over the peer mesh
        List<long[]> results = JdistSpark.run(spark, 4, Map.of(), group -> {
            Array b = group.broadcast(Array.full(DType.INT32, 7 + group.rank(), 16), 2);
            group.barrier();
            return new long[] {group.jobTable().map(t -> t.size()).orElse(0), (long) b.getDouble(15)};
        });
        for (long[] r : results) assertThat(r).containsExactly(4, 9);
    }

    @Test
    void runOnPartitionsGivesEachTaskItsPartitionsRows() {
        JavaRDD<Integer> data = spark.parallelize(IntStream.range(0, 40).boxed().toList(), 4);
        List<int[]> results = JdistSpark.runOnPartitions(data, (group, rows) -> {
            int local = 0;
            int count = 0;
            while (rows.hasNext()) {
                local += rows.next();
                count++;
            }
            int total = group.allSum(Array.of(local)).toIntArray()[0];
            return new int[] {group.rank(), count, local, total};
        });
        assertThat(results).hasSize(4);
        for (int r = 0; r < 4; r++) {
            int first = r * 10;
            assertThat(results.get(r)).containsExactly(r, 10, 10 * first + 45, 780);
        }
    }

    @Test
    void aStageThatIsNotABarrierStageGetsAClearError() {
        List<String> messages = spark.parallelize(List.of(1, 2), 2).map(i -> {
            try (Group g = JdistSpark.group()) {
                return "formed a group of " + g.size();
            } catch (ConfigException e) {
                return e.getMessage();
            }
        }).collect();
        assertThat(messages).hasSize(2).allSatisfy(m -> assertThat(m).contains("is not a barrier stage")
                .contains("rdd.barrier().mapPartitions"));
    }

    @Test
    void outsideATaskGetsAClearError() {
        assertThatThrownBy(JdistSpark::group).isInstanceOf(ConfigException.class).hasMessageContaining("no Spark task");
    }

    @Test
    void badSettingsFailOnTheDriverBeforeAnyTaskStarts() {
        assertThatThrownBy(() -> JdistSpark.run(spark, 2, Map.of("MLX_RANK", "0"), g -> 1))
                .isInstanceOf(ConfigException.class).hasMessageContaining("MLX_RANK would describe another group");
        assertThatThrownBy(() -> JdistSpark.run(spark, 2, Map.of("TIMEOUT", "3"), g -> 1))
                .isInstanceOf(ConfigException.class).hasMessageContaining("\"TIMEOUT\" is not a jdist setting");
        assertThatThrownBy(() -> JdistSpark.run(spark, 0, g -> 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aBadJdistSettingFailsTheTasksWithJdistsMessage() {
        assertThatThrownBy(() -> JdistSpark.run(spark, 2, Map.of("JDIST_TIMEOUT", "soon"), g -> 1))
                .isInstanceOf(SparkException.class).hasMessageContaining("JDIST_TIMEOUT=\"soon\" is not a duration");
    }

    @Test
    void theGroupIsClosedWhenTheTaskEndsEvenIfTheTaskDidNotCloseIt() {
        SEEN.clear();
        List<Integer> sums = BarrierMap.barrierMap(spark.parallelize(List.of(0, 1, 2, 3), 4), rows -> {
            Group g = JdistSpark.group(BarrierTaskContext.get(), Map.of("JDIST_TIMEOUT", "30"));   // not closed here
            SEEN.add(new Object[] {g});
            return g.allSum(Array.of(1)).toIntArray()[0];
        }).collect();
        assertThat(sums).containsExactly(4, 4, 4, 4);
        assertThat(SEEN).hasSize(4);
        for (Object[] seen : SEEN) {
            Group g = (Group) seen[0];
            assertThatThrownBy(() -> g.allSum(Array.of(1))).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
    }

    @Test
    void aRetriedStageAttemptFormsAFreshGroup() {
        SEEN.clear();
        // A barrier map stage (its results go through a shuffle), so Spark retries the whole stage when a task fails.
        List<Integer> sums = BarrierMap.barrierMap(spark.parallelize(List.of(0, 1, 2, 3), 4), rows -> {
            BarrierTaskContext ctx = BarrierTaskContext.get();
            Group g = JdistSpark.group(ctx, Map.of("JDIST_TIMEOUT", "30"));
            SEEN.add(new Object[] {ctx.stageAttemptNumber(), g.rank(), g});
            int sum = g.allSum(Array.of(ctx.stageAttemptNumber() + 1)).toIntArray()[0];
            if (ctx.stageAttemptNumber() == 0 && g.rank() == 1) throw new IllegalStateException("rank 1 fails attempt 0 on purpose");
            return sum;
        }).repartition(1).collect();
        assertThat(sums).containsExactly(8, 8, 8, 8);   // attempt 1: four tasks sum 2
        List<Object[]> first = SEEN.stream().filter(s -> (int) s[0] == 0).toList();
        List<Object[]> second = SEEN.stream().filter(s -> (int) s[0] == 1).toList();
        assertThat(first).hasSize(4);
        assertThat(second).hasSize(4);
        for (Object[] old : first) {
            Group g = (Group) old[2];
            assertThatThrownBy(() -> g.allSum(Array.of(1))).isInstanceOf(IllegalStateException.class);
            assertThat(second).noneMatch(s -> s[2] == g);
        }
    }

    /** Outcome of each rank in the kill test: the error's class, or "done". */
    static final Map<Integer, String> KILL_OUTCOMES = new ConcurrentHashMap<>();
    static final Map<Integer, Long> TASK_IDS = new ConcurrentHashMap<>();

    @Test
    void aTaskSparkKillsWhileItWaitsInACollectiveEndsAtOnceAndItsPeersGetPeerLost() throws Exception {
        KILL_OUTCOMES.clear();
        TASK_IDS.clear();
        // JDIST_TIMEOUT far beyond the test's own timeout: only the group's closing on kill can end the collective in time.
        CompletableFuture<List<Integer>> job = CompletableFuture.supplyAsync(() ->
                JdistSpark.run(spark, 4, Map.of("JDIST_TIMEOUT", "600"), group -> {
                    BarrierTaskContext ctx = BarrierTaskContext.get();
                    TASK_IDS.put(group.rank(), ctx.taskAttemptId());
                    if (group.rank() == 0) {
                        // rank 0 is late: the others wait for it inside the collective
                        while (!ctx.isInterrupted() && KILL_OUTCOMES.size() < 3) Thread.sleep(20);
                    }
                    try {
                        group.allSum(Array.of(1));
                        KILL_OUTCOMES.put(group.rank(), "done");
                    } catch (RuntimeException e) {
                        KILL_OUTCOMES.put(group.rank(), e.getClass().getName());
                        throw e;
                    }
                    return group.rank();
                }));
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (TASK_IDS.size() < 4 && System.nanoTime() < deadline) Thread.sleep(20);
        assertThat(TASK_IDS).hasSize(4);
        Thread.sleep(500);   // ranks 1..3 are in the all_sum now
        // Spark kills a task without interrupting its thread (as it kills the rest of a failed barrier stage).
        assertThat(spark.sc().killTaskAttempt(TASK_IDS.get(1), false, "killed by the test")).isTrue();
        assertThatThrownBy(() -> job.get(90, TimeUnit.SECONDS))
                .hasCauseInstanceOf(SparkException.class);
        for (int r = 1; r <= 3; r++) {
            assertThat(KILL_OUTCOMES.get(r)).as("rank %d", r).isEqualTo(PeerLostException.class.getName());
        }
    }
}
