/**
 * Shared memory between processes on one host: {@link dev.jdist.shm.ShmLink}, a single-producer/single-consumer byte
 * ring in a mapped region with sleeping flags for doorbells, and {@link dev.jdist.shm.ShmFiles}, the life of the files
 * those regions live in (created filled and mode 0600 under {@code /dev/shm}, deleted once mapped). Used by the ring's
 * shared-memory transport ({@code dev.jdist.ring}) and by the peer mesh between members on one host
 * ({@code dev.jdist.mesh}); knows neither.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): nothing of jdist.
 */
package dev.jdist.shm;
