/**
 * The API a program imports (docs/reference/collectives.md §2): {@link dev.jdist.Distributed} picks a backend and
 * caches groups; {@link dev.jdist.Group} validates every call once, handles 1-rank groups and runs a group's operations
 * one at a time in issue order ({@code OperationQueue}, which also fills in the facts of a failure);
 * {@link dev.jdist.Array} (its native memory comes from {@code dev.jdist.memory}), {@link dev.jdist.DType},
 * {@link dev.jdist.ReduceOp}, {@link dev.jdist.PeerOp}; the exception types ({@link dev.jdist.DistributedException} and
 * its subclasses); the JDK Flight Recorder event {@link dev.jdist.OperationEvent}. Backends are found through
 * {@code ServiceLoader} ({@code dev.jdist.spi.Backend}), never imported.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.spi, dev.jdist.flight, dev.jdist.cluster, dev.jdist.rendezvous, dev.jdist.liveness, dev.jdist.memory.
 */
package dev.jdist;
