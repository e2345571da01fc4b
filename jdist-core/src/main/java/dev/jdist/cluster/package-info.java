/**
 * Finding the job in the environment (docs/clusters.md): the sources in order ({@link dev.jdist.cluster.JobDiscovery}
 * → {@link dev.jdist.cluster.ClusterJob}), Slurm's host lists ({@link dev.jdist.cluster.Hostlist}), the ring hostfile
 * {@code MLX_HOSTFILE} and its address record ({@link dev.jdist.cluster.RingHostfile}, docs/reference/collectives.md
 * §3.1), and the evidence that a process is one of several when no backend formed a group
 * ({@link dev.jdist.cluster.JobEvidence}). No sockets.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi.
 */
package dev.jdist.cluster;
