/**
 * Meeting the other ranks of a job found in the environment (docs/clusters.md): rank 0's key-value store
 * ({@link dev.jdist.rendezvous.StoreServer}, {@link dev.jdist.rendezvous.StoreClient}, {@link dev.jdist.rendezvous.StoreWire}),
 * the store and all-gather rendezvous ({@link dev.jdist.rendezvous.StoreRendezvous},
 * {@link dev.jdist.rendezvous.ExchangeRendezvous}), the agreement check as a pure judge
 * ({@link dev.jdist.rendezvous.Agreement}) and over a group formed from MLX variables
 * ({@link dev.jdist.rendezvous.GroupAgreement}), and {@link dev.jdist.rendezvous.MlxHandOff}. Knows no backend: the store
 * proves the job token with {@code dev.jdist.spi.JobToken}.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.cluster.
 */
package dev.jdist.rendezvous;
