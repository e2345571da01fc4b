package dev.jdist.spi;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.PeerOp;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.algo.AlgorithmChoice;

import java.util.List;
import java.util.Map;
import java.util.Optional;

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

    // ---------------------------------------------------------------- the operations MLX lacks (docs/reference/collectives.md §13)
    // Group has checked every argument (roots and peers in range, peers other than this rank, byte counts that add
    // up) and, on backends whose bytes are MLX's (mlxWire), that every member is jdist. The defaults say the backend
    // lacks the operation; barrier and the equal all_to_all are built on the others.

    /**
     * {@code buffer} holds the same number of bytes on every rank: rank {@code root}'s bytes are sent, every other
     * rank's are overwritten with them (the root's buffer is not written).
     */
    default void broadcast(Array buffer, int root) {
        throw lacks("broadcast");
    }

    /** Returns once every member has called it. Default: an all_sum of one uint8 per member. */
    default void barrier() {
        Array token = Array.zeros(DType.UINT8, size());
        allReduce(token, token, ReduceOp.SUM);
    }

    /**
     * {@code in} and {@code out} hold {@code size()} blocks of equal size in rank order: block q of {@code in} goes to
     * rank q, block q of {@code out} comes from rank q. Default: {@link #allToAllV} with equal counts.
     */
    default void allToAll(Array in, Array out) {
        long[] counts = new long[size()];
        java.util.Arrays.fill(counts, out.size() / size());
        allToAllV(in, counts, out, counts.clone());
    }

    /**
     * Blocks of any size, back to back in rank order: {@code sendCounts[q]} elements of {@code in} go to rank q,
     * {@code recvCounts[q]} elements of {@code out} come from rank q ({@code recvCounts[q]} equals rank q's
     * {@code sendCounts[rank()]}; every rank's counts are consistent, which nothing checks across ranks).
     */
    default void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        throw lacks("all_to_all");
    }

    /** {@code out} (null except at {@code root}) receives rank q's {@code in} at block q, as all_gather's output. */
    default void gather(Array in, Array out, int root) {
        throw lacks("gather");
    }

    /** {@code in} (null except at {@code root}) holds {@code size()} blocks of {@code out}'s size: block q goes to rank q. */
    default void scatter(Array in, Array out, int root) {
        throw lacks("scatter");
    }

    /**
     * Runs the sends and receives of {@code ops} together and returns when all have completed (docs/reference/collectives.md §13.6); the
     * k-th transfer this rank sends to rank q in the batch is the k-th that q receives from this rank. Peers are other
     * ranks of the group; receive arrays are written whole.
     */
    default void batchSendRecv(List<PeerOp> ops) {
        throw lacks("batched send/recv");
    }

    /** The error of an operation this backend does not implement: what it is, and the backends that have it. */
    private UnsupportedCollectiveException lacks(String operation) {
        return new UnsupportedCollectiveException("the " + backendName() + " backend has no " + operation + " yet; the ring "
                + "and jaccl (between jdist ranks), mpi and nccl have it (docs/reference/collectives.md §13)");
    }

    /**
     * Whether the bytes between this group's members are MLX's own (the ring, JACCL), so that MLX processes may be
     * members: then {@link dev.jdist.Group} runs the operations MLX lacks only once every member is known to be jdist
     * (docs/reference/collectives.md §13.1).
     */
    default boolean mlxWire() { return false; }

    /**
     * For an {@link #mlxWire} backend: null when send/recv between this rank and {@code peer} is one MLX has (the
     * ring: a neighbour), else what MLX allows, for the message of the error raised when MLX peers may be present
     * ({@code "the ring sends only to a neighbour: ranks 2 (left) and 4 (right)"}).
     */
    default String beyondMlxPointToPoint(int peer) { return null; }

    /**
     * For an {@link #mlxWire} backend whose members are all jdist: why a member reaches only what MLX allows (the ring:
     * its neighbours) although every member is jdist, e.g. because not every pair of ranks can connect (the ring's
     * reachability check, docs/reference/collectives.md §10.1); null when any member reaches any other.
     */
    default String jdistReachLimited() { return null; }

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
     * For an {@link #mlxWire} group formed from MLX variables without a job token: whether this backend can find out, on
     * a channel MLX never uses, if every member is jdist ({@link #probeMembers}). False: such a group always runs as MLX's.
     */
    default boolean canProbeMembers() { return false; }

    /**
     * Called once on every member right after the group formed, when {@link #canProbeMembers}: null when every member is
     * jdist (then {@link #membersAreJdist} follows on every member, after an exchange over the group), else why MLX peers
     * may be present (then {@link #mayHoldMlxPeers} follows). Sends nothing an MLX peer would read; waits a short, bounded
     * time (docs/reference/collectives.md §3.13).
     */
    default String probeMembers(Map<String, String> env) { return "the " + backendName() + " backend cannot ask its members"; }

    /**
     * Called once, before the first operation, on a group formed from MLX variables without a job token whose members are
     * not all known to be jdist: it keeps MLX's bytes, and waits inside an operation as long as an MLX job would let it
     * ({@code JDIST_TIMEOUT}, else 30 minutes; a killed peer still ends the wait at once). {@code env} is the environment
     * the group was formed from.
     */
    default void mayHoldMlxPeers(Map<String, String> env) {}

    /**
     * After {@link #membersAreJdist}: how this group chooses each collective's algorithm between its jdist members
     * (docs/reference/collectives.md §10.4), for {@code jdist bench}; empty when it runs one algorithm whatever the size
     * (MLX peers may be present, the backend has no choice to make, or the members cannot all reach each other).
     */
    default Optional<AlgorithmChoice> algorithmChoice() { return Optional.empty(); }

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
