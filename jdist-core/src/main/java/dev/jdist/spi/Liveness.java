package dev.jdist.spi;

import dev.jdist.DistributedException;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Whether the other ranks of a job are alive, told apart from whether an operation makes progress
 * (docs/reliability.md, docs/reference/collectives.md §11). Between jdist ranks only — a job met through a rendezvous,
 * or formed from a hostfile with {@code JDIST_JOB_TOKEN} — a heartbeat on connections of its own says that every peer's
 * process is alive and responding; a peer that is gone, stopped or cut off is declared lost on every rank within
 * {@code JDIST_HEARTBEAT}, and a rank whose group broke tells the others why. {@code Group} hands it to the backend once
 * ({@link GroupImpl#useLiveness}).
 *
 * <p>How a backend uses it: a backend that waits by polling (JACCL's completion queues, MPI's {@code MPI_Test}, NCCL's
 * {@code ncclCommGetAsyncError}) asks {@link #failure()} in its waiting loop — one volatile read while the job is
 * healthy — and, when it answers, cleans up (aborts the communicator, ends the MPI job) and throws it. A backend that
 * sleeps in a blocking call (the ring's selector) registers {@link #onFailure} to be woken. Either way it waits for
 * progress up to {@link #progressDeadline()}, which is long, because a slow peer is no longer mistaken for a dead one.
 */
public interface Liveness {

    /**
     * Null while every member is alive and no rank's group has failed; otherwise a new exception for the caller to throw
     * (a {@link dev.jdist.PeerLostException}, {@link dev.jdist.PeerUnresponsiveException},
     * {@link dev.jdist.CollectiveMismatchException} or {@link dev.jdist.DeadlineExceededException} naming the rank it
     * concerns and its host). Cheap and thread-safe: poll it in a waiting loop.
     */
    DistributedException failure();

    /**
     * Runs {@code action} once, with the failure, when {@link #failure()} first answers — on the liveness watch's thread,
     * so it must only wake or close things (a selector, sockets) and return — or at once on this thread when it already
     * does.
     */
    void onFailure(Consumer<DistributedException> action);

    /**
     * How long an operation may wait without progress: {@code JDIST_TIMEOUT} when it is set, else 30 minutes (a peer
     * that is alive but not yet in the collective is waited for; one that is gone is found by the heartbeat instead).
     */
    Duration progressDeadline();

    /**
     * Called by a transport with its own failure (a lost connection, a deadline) before it closes its connections, so
     * that this rank's reason reaches the peers before they see the connections close. Cheap; the default does nothing.
     */
    default void failing(DistributedException failure) {}

    /**
     * Whether rank {@code rank} of this group closed it (its program finished, or called {@code close()}): data still
     * awaited from it will not come. Always false for groups made by {@code split}.
     */
    boolean hasLeft(int rank);
}
