/**
 * The digits example (docs/djl.md): the UCI handwritten digits read from sklearn's {@code digits.csv.gz}, split by a
 * stated seed, and an MLP trained data-parallel, the same program under {@code jdist launch}, {@code srun} and Spark.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.djl.
 */
package dev.jdist.djl.examples;
