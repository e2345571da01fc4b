package dev.jdist.spi;

import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * A job found without a hostfile (torchrun, Slurm, Kubernetes, an MPI launcher, an embedder's all-gather): this
 * process's rank and the job's size, and the means to meet the other ranks. A backend that can start this way
 * ({@link Backend#join}) binds what it listens on, {@link #agree offers} its record, gets every rank's record back
 * once all ranks agree, and builds its connections from that table.
 */
public interface JobRendezvous {

    int rank();

    int size();

    /** How the job was found, for messages: {@code torchrun variables (MASTER_ADDR=node0, MASTER_PORT=29500)}. */
    String description();

    /** The process environment (or the map {@code Distributed.init} was given). */
    Map<String, String> env();

    /** This process's rank among the job's processes on its host, when the launcher says. */
    OptionalInt localRank();

    /** The deadline of the rendezvous itself (meeting the others and agreeing). */
    Duration timeout();

    /**
     * The local IPv4 address to bind listeners on: the address other ranks will reach this rank at, or the wildcard
     * when that address is known only after the ranks have met (this rank reaches rank 0 through loopback).
     */
    InetAddress bindAddress();

    /**
     * Publishes this rank's record with {@code offer} and runs the agreement check: returns every rank's record once
     * all ranks have published and agree, or throws one error (the same on every rank) naming the ranks that
     * disagree, are missing or are duplicated. Called once.
     */
    JobTable agree(RankOffer offer);

    /**
     * After {@link #agree}: a rank-ordered all-gather of one byte string per rank (lengths may differ), under
     * {@code tag} (each tag once). The NCCL unique id goes through it.
     */
    List<byte[]> exchange(String tag, byte[] mine);
}
