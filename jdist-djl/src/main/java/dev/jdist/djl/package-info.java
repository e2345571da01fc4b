/**
 * Data-parallel training of DJL models over a jdist group (docs/djl.md): {@link dev.jdist.djl.DataParallelTrainer} (rank
 * 0's parameters copied to every rank, gradients averaged before DJL's optimizer step), the bucketed all-reduces that
 * carry them ({@link dev.jdist.djl.GradientBuckets}) and each rank's shard of a dataset
 * ({@link dev.jdist.djl.DistributedSampler}, {@link dev.jdist.djl.DistributedBatchSampler}). DJL is the user's.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.
 */
package dev.jdist.djl;
