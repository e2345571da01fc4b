package dev.jdist.spark;

import dev.jdist.ConfigException;
import dev.jdist.Group;
import dev.jdist.spi.JobToken;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.TaskInterruptListener;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

import java.io.Serializable;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * jdist groups across the tasks of a Spark barrier stage (docs/spark.md).
 *
 * <p>Inside a task of a barrier stage, {@link #group(TaskContext)} forms a ring group of the stage's tasks through
 * {@code Distributed.connect} (the agreement check, the job table, the liveness watch): rank = partition id, size =
 * number of tasks. The group belongs to the task attempt: it is closed when the task
 * ends, however it ends, and when Spark kills the task; a retried attempt forms a new one. On the driver,
 * {@link #run} and {@link #runOnPartitions} start the barrier stage for you and collect one result per task.
 *
 * <p>Settings: the {@code JDIST_*} variables of the executor's environment (set them with
 * {@code spark.executorEnv.JDIST_TIMEOUT=30} and the like) and {@code MLX_RING_VERBOSE}, overridden by the
 * {@code settings} map of the calls that take one (same names). {@code JDIST_JOB_TOKEN} is set per stage attempt by
 * jdist-spark and cannot be given, nor can {@code MLX_RANK} and {@code MLX_HOSTFILE}.
 */
public final class JdistSpark {

    private JdistSpark() {}

    /** The group of the barrier stage the calling task belongs to: {@code group(TaskContext.get())}. */
    public static Group group() { return group(TaskContext.get(), Map.of()); }

    /** {@code group(context, Map.of())}. */
    public static Group group(TaskContext context) { return group(context, Map.of()); }

    /**
     * Forms the group of the barrier stage attempt {@code context} belongs to. Every task of the stage must call it at
     * the same point (it exchanges addresses with the stage's {@code allGather}). The group is closed when the task
     * completes, fails or is killed; closing it earlier yourself is fine.
     *
     * @param settings jdist settings by variable name ({@code JDIST_TIMEOUT}, {@code JDIST_RING_SPIN_US}, ...),
     *                 over those of the executor's environment
     * @throws ConfigException outside a Spark task, in a stage that is not a barrier stage, or for a bad setting
     */
    public static Group group(TaskContext context, Map<String, String> settings) {
        Map<String, String> env = settings(System.getenv(), settings);
        if (context == null) {
            throw new ConfigException("jdist-spark: no Spark task is running on this thread; form the group inside a task of "
                    + "a barrier stage (rdd.barrier().mapPartitions(...)) or use JdistSpark.run / runOnPartitions on the driver");
        }
        if (!(context instanceof BarrierTaskContext barrier)) {
            throw new ConfigException("jdist-spark: stage " + context.stageId() + " is not a barrier stage, so its tasks may "
                    + "not all run at once and cannot form a group; run the code with rdd.barrier().mapPartitions(...) "
                    + "or JdistSpark.run / runOnPartitions");
        }
        Group group = SparkRingFormation.form(barrier, env);
        barrier.addTaskCompletionListener((TaskCompletionListener) ctx -> group.close());
        // Spark kills the other tasks of a failed barrier stage; closing the group ends a collective they wait in.
        barrier.addTaskInterruptListener((TaskInterruptListener) (ctx, reason) -> group.close());
        return group;
    }

    /**
     * Runs {@code task} on {@code tasks} barrier tasks, each with its group, and returns their results by rank.
     * The job fails as a whole when any task fails (Spark does not retry the tasks of a barrier result stage).
     */
    public static <R> List<R> run(JavaSparkContext spark, int tasks, GroupTask<R> task) {
        return run(spark, tasks, Map.of(), task);
    }

    /** As {@link #run(JavaSparkContext, int, GroupTask)} with jdist settings for the groups. */
    public static <R> List<R> run(JavaSparkContext spark, int tasks, Map<String, String> settings, GroupTask<R> task) {
        if (tasks < 1) throw new IllegalArgumentException("jdist-spark: run needs at least 1 task, got " + tasks);
        if (task == null) throw new IllegalArgumentException("jdist-spark: run needs a task, got null");
        JavaRDD<Integer> ranks = spark.parallelize(IntStream.range(0, tasks).boxed().toList(), tasks);
        return runOnPartitions(ranks, settings, (group, rows) -> task.run(group));
    }

    /**
     * Runs {@code task} on every partition of {@code data} in one barrier stage (rank = partition index, size = number
     * of partitions) and returns the results by rank.
     */
    public static <T, R> List<R> runOnPartitions(JavaRDD<T> data, PartitionTask<T, R> task) {
        return runOnPartitions(data, Map.of(), task);
    }

    /** As {@link #runOnPartitions(JavaRDD, PartitionTask)} with jdist settings for the groups. */
    public static <T, R> List<R> runOnPartitions(JavaRDD<T> data, Map<String, String> settings, PartitionTask<T, R> task) {
        if (task == null) throw new IllegalArgumentException("jdist-spark: runOnPartitions needs a task, got null");
        settings(Map.of(), settings);   // a bad setting fails here, on the driver, not in every task
        ClassTag<R> tag = anyRef();
        // mapPartitions with a Scala function: RDDBarrier.mapPartitionsWithEvaluator (Spark 4.2.0) makes a stage that is
        // not a barrier stage.
        RDD<R> results = data.rdd().barrier().mapPartitions(new BarrierTask<>(new HashMap<>(settings), task), false, tag);
        return new JavaRDD<>(results, tag).collect();
    }

    /** The variables a group reads: the executor's jdist variables, then {@code overrides}. */
    static Map<String, String> settings(Map<String, String> processEnv, Map<String, String> overrides) {
        if (overrides == null) throw new IllegalArgumentException("jdist-spark: settings must not be null (use Map.of())");
        Map<String, String> env = new HashMap<>();
        processEnv.forEach((k, v) -> {
            if (isSetting(k) && !SparkRingFormation.OWNED.contains(k)) env.put(k, v);
        });
        overrides.forEach((k, v) -> {
            if (SparkRingFormation.OWNED.contains(k)) {
                throw new ConfigException("jdist-spark: setting " + k + (k.equals(JobToken.VARIABLE)
                        ? " is chosen per stage attempt by jdist-spark" : " would describe another group (jdist-spark forms the "
                        + "stage's group itself)") + "; remove it from the settings");
            }
            if (!isSetting(k)) {
                throw new ConfigException("jdist-spark: \"" + k + "\" is not a jdist setting; the settings are jdist's "
                        + "variables (JDIST_TIMEOUT, JDIST_RING_SPIN_US, JDIST_TRANSPORT, MLX_RING_VERBOSE, ...)");
            }
            env.put(k, v);
        });
        return env;
    }

    private static boolean isSetting(String name) {
        return name != null && (name.startsWith("JDIST_") || name.equals("MLX_RING_VERBOSE"));
    }

    @SuppressWarnings("unchecked")
    private static <R> ClassTag<R> anyRef() {
        return (ClassTag<R>) ClassTag$.MODULE$.apply(Object.class);
    }

    /** One barrier task: form the group, run the task on the partition's rows, close the group, return the result. */
    private static final class BarrierTask<T, R> extends AbstractFunction1<Iterator<T>, Iterator<R>> implements Serializable {
        private final HashMap<String, String> settings;
        private final PartitionTask<T, R> task;

        BarrierTask(HashMap<String, String> settings, PartitionTask<T, R> task) {
            this.settings = settings;
            this.task = task;
        }

        @Override
        public Iterator<R> apply(Iterator<T> rows) {
            R result;
            try (Group group = group(TaskContext.get(), settings)) {
                result = task.run(group, CollectionConverters.asJava(rows));
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Exception e) {
                throw new RuntimeException("jdist-spark: the task of partition " + TaskContext.getPartitionId() + " failed: " + e, e);
            }
            return CollectionConverters.asScala(Collections.singletonList(result).iterator());
        }
    }
}
