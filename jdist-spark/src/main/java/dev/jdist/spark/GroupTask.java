package dev.jdist.spark;

import dev.jdist.Group;

import java.io.Serializable;

/**
 * What {@link JdistSpark#run(org.apache.spark.api.java.JavaSparkContext, int, GroupTask)} runs on every barrier
 * task: the function receives the task's group (rank = partition id) and returns a result the driver collects.
 * Serializable because Spark ships it to the executors; the result must be serializable too.
 */
@FunctionalInterface
public interface GroupTask<R> extends Serializable {
    R run(Group group) throws Exception;
}
