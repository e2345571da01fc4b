/**
 * Operations as data, apart from any transport: the schedule format between any members of a group
 * ({@link dev.jdist.algo.MeshSchedule}, docs/reference/collectives.md §10.3, run by a {@link dev.jdist.algo.ScheduleRunner}),
 * the size-aware algorithms between jdist ranks as pure schedule builders, and the one place that chooses among them
 * (§10.4–§10.9; a group's choice as {@link dev.jdist.algo.AlgorithmChoice}): {@link dev.jdist.algo.RecursiveDoubling},
 * {@link dev.jdist.algo.HalvingDoubling} (Rabenseifner), {@link dev.jdist.algo.RecursiveHalving},
 * {@link dev.jdist.algo.Bruck}, and for members that share hosts {@link dev.jdist.algo.Hierarchical} over a
 * {@link dev.jdist.algo.HostLayout} (§10.11); {@link dev.jdist.algo.AlgorithmPolicy} reads {@code JDIST_ALGO} and
 * {@code JDIST_ALGO_RULES} ({@link dev.jdist.algo.AlgorithmRules}) and decides from the size and the
 * {@link dev.jdist.algo.Topology}. The operations MLX lacks (§13): {@link dev.jdist.algo.PeerSchedules} between ranks
 * that reach each other, {@link dev.jdist.algo.NeighbourSchedules} between ring neighbours only, and
 * {@link dev.jdist.algo.PeerOperations}, the code around them shared by every {@link dev.jdist.algo.ScheduleRunner}.
 * No sockets: {@code dev.jdist.mesh} (TCP) and {@code dev.jdist.jaccl} (RDMA frames) run the schedules.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.
 */
package dev.jdist.algo;
