/**
 * Setting up TCP connections between jdist processes without threads, on the caller's selector: {@link
 * dev.jdist.connect.Dialer} (connection attempts to one address, retried with a backoff), {@link
 * dev.jdist.connect.Handshake} (one side of a handshake over a new connection, driven by the selector's events) and
 * {@link dev.jdist.connect.Sockets} (listening, accepting, the options every connection gets). Used by the ring's
 * connector ({@code dev.jdist.ring.RingConnector}, docs/reference/collectives.md §3.2 and §9) and by the peer mesh
 * ({@code dev.jdist.mesh.PeerMesh}, §10.2); knows neither.
 *
 * <p>What is said during a handshake, and what it proves, is the caller's: a {@link dev.jdist.connect.Handshake.Side}
 * gives the bytes to send and judges the bytes received; this package moves them, ends the handshake and says how it
 * ended. Deadlines are the caller's too (it owns the loop around its selector). It imports nothing of jdist, only
 * {@code java.*}: the exceptions and messages users see are made by the callers.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): nothing of jdist.
 */
package dev.jdist.connect;
