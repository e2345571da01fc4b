package dev.jdist.spi;

import dev.jdist.Array;
import dev.jdist.ReduceOp;

import java.util.Map;

/**
 * What every backend implements. {@link dev.jdist.Group} validates arguments, allocates outputs,
 * handles size-1 groups and serialises calls, so implementations see only well-formed requests,
 * one at a time, on groups of size ≥ 2.
 *
 * <p>Outputs ({@code out} of allReduce, allGather, sumScatter and recv) may hold stale bytes on entry
 * ({@link dev.jdist.Group} allocates them without zero-filling): an implementation must write every
 * byte of {@code out} or throw.
 */
public interface GroupImpl extends AutoCloseable {

    int rank();

    int size();

    /** The backend's name, for messages. */
    String backendName();

    /** Collective over this group; {@code color >= 0}, negative {@code key} already replaced by the parent rank. */
    GroupImpl split(int color, int key);

    /** Element-wise reduction over ranks; {@code out} has the dtype and element count of {@code in} and may be {@code in}. */
    void allReduce(Array in, Array out, ReduceOp op);

    /** {@code out} holds {@code size() * in.nbytes()} bytes; block q receives rank q's input. */
    void allGather(Array in, Array out);

    /** {@code in} holds {@code size()} equal chunks; {@code out} (one chunk) receives chunk {@code rank()} of the sum. */
    void sumScatter(Array in, Array out);

    /** Sends the bytes of {@code x} to {@code dst}. */
    void send(Array x, int dst);

    /** Fills {@code out} with bytes received from {@code src}. */
    void recv(Array out, int src);

    /**
     * Called once, on every member at the same point before the first operation, when every member of this group is
     * known to be jdist ({@code table}: the job met through a rendezvous, or formed from MLX variables with a job token
     * and passed the agreement check). From then on the backend may use what only jdist ranks understand (the ring: its
     * peer mesh and size-aware algorithms, docs/reference/collectives.md §10) and may communicate over the group to set it up;
     * {@code env} is the environment the group was formed from. Never called when MLX peers may be present. A failure
     * is thrown, and the caller closes the group.
     */
    default void membersAreJdist(JobTable table, Map<String, String> env) {}

    /**
     * jdist-internal: every member is jdist and the job's liveness watch runs (docs/reliability.md). A backend that
     * implements this consults {@code liveness} while it waits, so that a lost peer or a failure elsewhere ends the wait
     * within {@code JDIST_HEARTBEAT}, and waits for progress up to {@link Liveness#progressDeadline()}. Called once,
     * before the first user operation; the default ignores it (operations then end only at their own deadline).
     */
    default void useLiveness(Liveness liveness) {}

    /** Releases sockets, threads and native resources. Idempotent. */
    @Override
    void close();
}
