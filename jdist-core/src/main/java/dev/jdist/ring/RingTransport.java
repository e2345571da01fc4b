package dev.jdist.ring;

/**
 * Moves the bytes of {@link RingSchedule} streams between a rank and its two ring neighbours: the
 * transport half of the ring (the schedule is the algorithm half). {@link TcpTransport} uses the TCP
 * connections (MLX's wire); {@link ShmTransport} uses shared memory between ranks on one host. Both
 * extend {@link RingTransportBase}.
 */
interface RingTransport extends AutoCloseable {

    /** Throws when the group is broken (same kind as the first failure) or closed. */
    void checkUsable(String opName);

    /** Runs {@code transfer}'s streams; returns when every byte has been sent and received. */
    void run(Transfer transfer);

    /**
     * Breaks the group because of a failure elsewhere (its peer mesh): later operations fail with {@code cause}, and every
     * ring connection is closed so that the neighbours fail too.
     */
    void breakGroup(dev.jdist.DistributedException cause);

    @Override
    void close();
}
