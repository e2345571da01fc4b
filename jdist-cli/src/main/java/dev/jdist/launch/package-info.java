/**
 * {@code jdist launch}: from arguments (MLX's parsing rules) to a plan (pure: {@link dev.jdist.launch.EnvironmentPlan})
 * to running ranks locally, over ssh or under mpirun. Also the job-target options bench and doctor share
 * ({@link dev.jdist.launch.JobTargetOptions}, {@link dev.jdist.launch.RankOptions}) and what a job needs from its hosts
 * ({@link dev.jdist.launch.JobRequirements}, checked by {@code doctor}).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.flight, dev.jdist.rendezvous, dev.jdist.mpi, dev.jdist.console, dev.jdist.hosts.
 */
package dev.jdist.launch;
