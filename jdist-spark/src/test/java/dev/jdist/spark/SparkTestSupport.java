package dev.jdist.spark;

import org.apache.spark.SparkConf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

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
}
