package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.DistributedException;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.Liveness;

import java.time.Duration;
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
