/**
 * Data- and tensor-parallel helpers over any {@code Group} (docs/reference/collectives.md §7):
 * {@link dev.jdist.nn.Gradients}, {@link dev.jdist.nn.GradientBuckets}, {@link dev.jdist.nn.Linear}, the sharded layers
 * and small float32 kernels.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.reduce.
 */
package dev.jdist.nn;
