package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.DistributedException;
import dev.jdist.ReduceOp;
import dev.jdist.PeerOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.algo.PeerOperations;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.Liveness;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A JACCL group: the side channel (kept open for the group's lifetime, carrying nothing after
 * set-up), the RDMA transport, and the mesh or ring algorithms over it (docs/reference/collectives.md §4).
 *
 * <p>Teardown cannot hang or crash: {@link #close()} first ends any operation still running on another thread (it
 * fails at its next poll), waits for it to leave the verbs calls for at most {@link #CLOSE_WAIT}, and only then
 * destroys queue pairs and deregisters buffers; an operation that does not leave in time keeps them (a leak, never
 * a use after free).
 */
public final class JacclGroup implements GroupImpl {
    private final int rank, size;
    private final JacclConfig.Topology topology;
    private final SideChannel side;
    private final RdmaTransport transport;
    private final JacclCollectives collectives;
    private final FrameEngine engine;
    /** The operations MLX lacks, as schedules run over the frame engine (docs/reference/collectives.md §13.9). */
    private final PeerOperations peerOperations;
    /** Operations inside the verbs calls now, and whether close() began (then no new one enters). */
    private final AtomicInteger active = new AtomicInteger();
    private volatile boolean closing;
    private boolean closed;
    /** How long {@link #close()} waits for an operation running on another thread to leave. */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

    /**
     * Assembles a group over an already connected transport ({@code wires} is the ring's {@code m};
     * ignored for a mesh).
     */
    static JacclGroup over(int rank, int size, JacclConfig.Topology topology, int wires, Duration timeout,
                           SideChannel side, RdmaTransport transport) {
        return new JacclGroup(rank, size, topology, wires, timeout, side, transport);
    }

    private JacclGroup(int rank, int size, JacclConfig.Topology topology, int wires, Duration timeout,
                       SideChannel side, RdmaTransport transport) {
        this.rank = rank;
        this.size = size;
        this.topology = topology;
        this.side = side;
        this.transport = transport;
        this.engine = new FrameEngine(transport, rank, timeout);
        this.collectives = topology == JacclConfig.Topology.MESH
                ? new MeshCollectives(engine, size) : new RingCollectives(engine, size, wires);
        boolean mesh = topology == JacclConfig.Topology.MESH;
        this.peerOperations = new PeerOperations(rank, size, mesh ? PeerOperations.Reach.EVERY_RANK : PeerOperations.Reach.NEIGHBOURS,
                new FrameScheduleRunner(engine, size, mesh ? 0 : wires), this::allGatherSendSizes, RING_HINT);
    }

    /**
     * What a rank of a JACCL ring is told when it names a rank it has no connection to: MLX's ring rule, and how to get
     * a topology that has them.
     */
    static final String RING_HINT = "the JACCL ring connects only neighbours (MLX's rule). For send/recv and batches "
            + "between any ranks use the JACCL mesh: a device file (MLX_IBV_DEVICES) with a device for every pair of ranks, "
            + "and MLX_JACCL_RING unset";

    /** all_to_all_v on the ring: relaying ranks need every rank's send sizes (one all_gather of n int64 per rank). */
    private long[][] allGatherSendSizes(long[] mine) {
        MemorySegment in = Arena.ofAuto().allocate(8L * size, 8), all = Arena.ofAuto().allocate(8L * size * size, 8);
        MemorySegment.copy(mine, 0, in, ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, size);
        collectives.allGather(in, all, 8L * size);
        long[][] bytes = new long[size][size];
        for (int q = 0; q < size; q++) {
            MemorySegment.copy(all, ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8L * size * q, bytes[q], 0, size);
        }
        return bytes;
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    @Override public String backendName() { return "jaccl"; }

    /** Mesh or ring. */
    public JacclConfig.Topology topology() { return topology; }

    @Override
    public GroupImpl split(int color, int key) {
        throw new UnsupportedCollectiveException("the JACCL backend cannot split a group (MLX's JACCL cannot either);"
                + " use the mpi or nccl backend for sub-groups");
    }

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        guarded(() -> collectives.allReduce(in.segment(), out.segment(), in.dtype(), in.size(), op));
    }

    @Override
    public void allGather(Array in, Array out) {
        guarded(() -> collectives.allGather(in.segment(), out.segment(), in.nbytes()));
    }

    @Override
    public void sumScatter(Array in, Array out) {
        guarded(() -> collectives.sumScatter(in.segment(), out.segment(), in.dtype(), out.size()));
    }

    @Override
    public void send(Array x, int dst) {
        guarded(() -> collectives.send(x.segment(), x.nbytes(), dst));
    }

    @Override
    public void recv(Array out, int src) {
        guarded(() -> collectives.recv(out.segment(), out.nbytes(), src));
    }

    // ------------------------------------------------------------------ the operations MLX lacks (docs/reference/collectives.md §13.9)

    /** JACCL's bytes are MLX's: with MLX peers possible only what MLX has runs (§13.1). */
    @Override
    public boolean mlxWire() { return true; }

    /** The mesh reaches every rank, as MLX's JACCL mesh; the ring only its neighbours. */
    @Override
    public String beyondMlxPointToPoint(int peer) {
        if (topology == JacclConfig.Topology.MESH || dev.jdist.algo.NeighbourSchedules.isNeighbour(rank, size, peer)) return null;
        return "the JACCL ring sends only to a neighbour: ranks " + Math.floorMod(rank - 1, size) + " (left) and "
                + (rank + 1) % size + " (right) of " + size;
    }

    @Override
    public void broadcast(Array buffer, int root) {
        guarded(() -> peerOperations.broadcast(buffer, root));
    }

    @Override
    public void allToAll(Array in, Array out) {
        guarded(() -> peerOperations.allToAll(in, out));
    }

    @Override
    public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
        guarded(() -> peerOperations.allToAllV(in, sendCounts, out, recvCounts));
    }

    @Override
    public void gather(Array in, Array out, int root) {
        guarded(() -> peerOperations.gather(in, out, root));
    }

    @Override
    public void scatter(Array in, Array out, int root) {
        guarded(() -> peerOperations.scatter(in, out, root));
    }

    /** Single send/recv keep JACCL's own (§4.5, §4.6); a batch's messages are framed the same way, so they match in order. */
    @Override
    public void batchSendRecv(List<PeerOp> ops) {
        guarded(() -> peerOperations.batchSendRecv(ops));
    }

    /** Runs an operation unless the group is closing; close() waits for it to leave. */
    private void guarded(Runnable op) {
        active.incrementAndGet();
        try {
            if (closing) throw new IllegalStateException("JACCL rank " + rank + ": the group is closed");
            op.run();
        } finally {
            active.decrementAndGet();
        }
    }

    /** Every member is jdist: the job's liveness watch ends waits for lost peers and sets the progress deadline (docs/reference/collectives.md §11). */
    @Override
    public void useLiveness(Liveness liveness) {
        engine.useLiveness(liveness);
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        closing = true;
        engine.abort(new DistributedException("JACCL rank " + rank + ": the group was closed (close()) while this operation "
                + "waited; the group cannot be used any more", null, rank, null));
        long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
        while (active.get() > 0 && System.nanoTime() - deadline < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        try {
            if (active.get() == 0) {
                transport.close();
            } else {
                System.err.println("JACCL rank " + rank + ": an operation on another thread did not leave the verbs calls within "
                        + CLOSE_WAIT.toSeconds() + " s of close(); its queue pairs and buffers are left in place rather than freed under it");
            }
        } finally {
            side.close();
        }
    }
}
