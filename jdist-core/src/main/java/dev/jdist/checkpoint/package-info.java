/**
 * A training state saved and loaded atomically, for jobs that {@code jdist launch --max-restarts} starts again after a
 * failure (docs/training.md, "Surviving a lost rank"): {@link dev.jdist.checkpoint.TrainingState} (named float and
 * double arrays, the step, small metadata such as RNG seeds), {@link dev.jdist.checkpoint.Checkpointer} (one directory
 * per rank; temporary file, fsync, rename; a CRC-32C so a torn or corrupt file is refused and the previous one used)
 * and {@link dev.jdist.checkpoint.Checkpoints} (the step every rank of a restarted job resumes from).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.
 */
package dev.jdist.checkpoint;
