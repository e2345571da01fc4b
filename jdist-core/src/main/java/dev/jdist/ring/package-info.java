/**
 * The ring backend (docs/reference/collectives.md §3), byte-compatible with MLX's: settings
 * ({@link dev.jdist.ring.RingSettings}), connection set-up ({@link dev.jdist.ring.RingConnector}) and its authentication
 * handshake ({@link dev.jdist.ring.RingAuthenticator}, §9), the algorithm as pure data ({@link dev.jdist.ring.RingSchedule}),
 * two transports ({@link dev.jdist.ring.TcpTransport}, {@link dev.jdist.ring.ShmTransport}) and the group
 * ({@link dev.jdist.ring.RingGroup}), which between jdist ranks also runs the size-aware algorithms over a peer mesh
 * (§10).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.reduce, dev.jdist.algo, dev.jdist.mesh, dev.jdist.shm, dev.jdist.connect, dev.jdist.cluster.
 */
package dev.jdist.ring;
