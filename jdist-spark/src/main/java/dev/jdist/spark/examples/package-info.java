/**
 * A data-parallel training example over {@code dev.jdist.spark} ({@link dev.jdist.spark.examples.SparkDataParallel}).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.nn, dev.jdist.spark.
 */
package dev.jdist.spark.examples;
