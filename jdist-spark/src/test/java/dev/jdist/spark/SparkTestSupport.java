package dev.jdist.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkExecutorInfo;
import org.apache.spark.api.java.JavaSparkContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/** What every test's Spark needs: loopback only, no UI, small and quick. */
final class SparkTestSupport {
    private SparkTestSupport() {}

    static SparkConf conf(String master, String name) {
        return new SparkConf()
                .setMaster(master)
                .setAppName(name)
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.ui.showConsoleProgress", "false");
    }

    /**
     * A local cluster: a standalone master and {@code workers} workers in this JVM, each starting its executor as a
     * separate JVM from the Spark home in {@code SPARK_HOME} (set by the build: RELEASE and an empty jars/ folder,
     * laid out here), with this test's class path.
     */
    static SparkConf clusterConf(int workers, int coresPerWorker, String name) {
        String home = System.getenv("SPARK_HOME");
        if (home == null) throw new IllegalStateException("SPARK_HOME is not set; run the cluster tests through Maven (failsafe sets it)");
        try {
            Files.createDirectories(Path.of(home, "jars"));
            Files.writeString(Path.of(home, "RELEASE"), "Spark home for jdist-spark's tests: jars come from the test class path\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String classPath = System.getProperty("java.class.path");
        return conf("local-cluster[" + workers + "," + coresPerWorker + ",1024]", name)
                .set("spark.executor.extraClassPath", classPath)
                .set("spark.executor.memory", "512m")
                .set("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
                // check every second (not every 15) whether the executors have registered the slots a barrier stage needs
                .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
                .set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "120");
    }

    /** Waits (at most 120 s) until {@code count} executors have registered and none runs a task. */
    static void awaitIdleExecutors(JavaSparkContext spark, int count) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            SparkExecutorInfo[] infos = spark.sc().statusTracker().getExecutorInfos();   // includes the driver
            long executors = infos.length - 1;
            int running = Arrays.stream(infos).mapToInt(SparkExecutorInfo::numRunningTasks).sum();
            if (executors == count && running == 0) return;
            if (System.nanoTime() > deadline) {
                throw new AssertionError("after 120 s the cluster has " + executors + " executors (expected " + count + ") and "
                        + running + " running tasks (expected 0)");
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
