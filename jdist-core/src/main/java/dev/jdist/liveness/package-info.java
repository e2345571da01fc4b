/**
 * The job's liveness watch (docs/reliability.md, docs/reference/collectives.md §11–§12): between jdist ranks, a
 * heartbeat on UDP sockets of its own tells a peer that is alive from one that is gone, stopped or cut off, a rank whose
 * group broke tells the others why, and the ranks' current operations are compared to find ranks that called different
 * collectives. {@link dev.jdist.liveness.LivenessMonitor} is the one thread and socket per job; backends see it as a
 * {@link dev.jdist.spi.Liveness}. Pure parts ({@link dev.jdist.liveness.Diagnosis}, the wire codec) are tested without
 * sockets.
 *
 * <p>What a group of jdist ranks adds around each operation is {@link dev.jdist.liveness.GroupWatch}, the group
 * queue's {@link dev.jdist.liveness.OperationWatch}: the mismatch check of {@code JDIST_DEBUG=detail} and the
 * explanation of a failure.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi.
 */
package dev.jdist.liveness;
