package dev.jdist.rendezvous;

import dev.jdist.spi.JobRendezvous;
import dev.jdist.spi.JobTable;

import java.util.Optional;

/** An open rendezvous as its owner ({@code Distributed}) sees it: the table once agreed, and the store to close. */
public sealed interface RendezvousSession extends JobRendezvous, AutoCloseable permits StoreRendezvous, ExchangeRendezvous {

    /** The agreed table, once a backend's {@link #agree} returned; empty before. */
    Optional<JobTable> table();

    /** Closes the store connection (rank 0: the store itself). Idempotent. */
    @Override
    void close();
}
