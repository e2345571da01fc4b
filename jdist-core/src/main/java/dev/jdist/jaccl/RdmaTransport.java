package dev.jdist.jaccl;

import java.lang.foreign.MemorySegment;

/**
 * What the JACCL algorithms need from verbs (docs/reference/collectives.md §4.4): registered buffers,
 * whole-frame two-sided SEND/RECV posted per queue pair, and a completion queue per queue pair.
 * {@link VerbsTransport} implements it over libibverbs; the tests use an in-memory fabric with the
 * same semantics (whole frames, per-QP FIFO order, completions with a status).
 *
 * <p>Connections are numbered: mesh — connection {@code p} is the queue pair to peer {@code p}
 * (this rank's own number is unused); ring with {@code m} wires — {@code left[w] = w},
 * {@code right[w] = m + w}.
 */
public interface RdmaTransport extends AutoCloseable {

    /** A buffer registered with every protection domain of this rank; sends and receives cover it whole. */
    interface Buffer {
        MemorySegment segment();
    }

    /** Allocates and registers a page-aligned buffer of {@code bytes}. */
    Buffer allocate(long bytes);

    /** Posts one signalled SEND of the whole buffer on {@code conn}. */
    void postSend(int conn, Buffer buffer, long wrId);

    /** Posts one RECV of the whole buffer on {@code conn}. */
    void postRecv(int conn, Buffer buffer, long wrId);

    /**
     * Polls {@code conn}'s completion queue without blocking; fills up to {@code wrIds.length}
     * completions ({@code wrIds[i]}, {@code status[i]}, 0 = success) and returns how many.
     */
    int poll(int conn, long[] wrIds, int[] status);

    /** The peer rank at the other end of {@code conn}. */
    int peerOf(int conn);

    /** A human description of the connection ("rank 2 via rdma_en3"), for messages. */
    String describe(int conn);

    /** The text of a completion status. */
    String statusText(int status);

    /** Destroys queue pairs and deregisters buffers. Idempotent. */
    @Override
    void close();
}
