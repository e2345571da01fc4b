/**
 * jdist groups across the tasks of an Apache Spark barrier stage (docs/spark.md): {@link dev.jdist.spark.JdistSpark}
 * forms a ring group of the stage's tasks ({@link dev.jdist.spark.SparkRingFormation}: rank = partition id, the ring's
 * variables from the tasks' addresses) and ties it to the task attempt.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi.
 */
package dev.jdist.spark;
