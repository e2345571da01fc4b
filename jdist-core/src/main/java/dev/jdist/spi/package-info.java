/**
 * The seam between the API and the backends (docs/architecture.md, "The SPI"): {@link dev.jdist.spi.Backend}, found
 * by {@code ServiceLoader}, and {@link dev.jdist.spi.GroupImpl}, what every backend's group implements (with the
 * questions jdist's own code asks it by name, such as {@link dev.jdist.spi.GroupImpl#algorithmChoice()});
 * {@link dev.jdist.spi.GroupAccess}, the one way from a {@code Group} to its backend outside {@code dev.jdist}; and the
 * facts every backend shares: {@link dev.jdist.spi.JdistTimeout}, {@link dev.jdist.spi.JobToken} (the job token and its
 * proofs), {@link dev.jdist.spi.Liveness}, the rendezvous records ({@link dev.jdist.spi.JobRendezvous},
 * {@link dev.jdist.spi.RankRecord}, {@link dev.jdist.spi.RankOffer}, {@link dev.jdist.spi.JobTable},
 * {@link dev.jdist.spi.KeyValueStore}), {@link dev.jdist.spi.JdistVersion}, strict JSON and native access. Knows no
 * backend.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.algo.
 */
package dev.jdist.spi;
