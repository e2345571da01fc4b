/**
 * {@code jdist launch}: from arguments (MLX's parsing rules) to a plan (pure: {@link dev.jdist.launch.EnvironmentPlan})
 * to running ranks locally, over ssh or under mpirun. Also the job-target options bench and doctor share
 * ({@link dev.jdist.launch.JobTargetOptions}, {@link dev.jdist.launch.RankOptions}) and what a job needs from its hosts
 * ({@link dev.jdist.launch.JobRequirements}, checked by {@code doctor}). Uses {@code hosts} and {@code console}.
 */
package dev.jdist.launch;
