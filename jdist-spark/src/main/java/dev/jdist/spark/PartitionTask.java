package dev.jdist.spark;

import dev.jdist.Group;

import java.io.Serializable;
import java.util.Iterator;

/**
 * What {@link JdistSpark#runOnPartitions(org.apache.spark.api.java.JavaRDD, PartitionTask)} runs on every partition
 * of a data set: the task's group (rank = partition index, size = number of partitions) and the partition's rows.
 * Serializable because Spark ships it to the executors; the result must be serializable too.
 */
@FunctionalInterface
public interface PartitionTask<T, R> extends Serializable {
    R run(Group group, Iterator<T> rows) throws Exception;
}
