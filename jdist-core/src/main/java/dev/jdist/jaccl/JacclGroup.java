package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupImpl;

import java.time.Duration;

/**
 * A JACCL group: the side channel (kept open for the group's lifetime, carrying nothing after
 * set-up), the RDMA transport, and the mesh or ring algorithms over it (spec collectives.md §4).
 */
public final class JacclGroup implements GroupImpl {
    private final int rank, size;
    private final JacclConfig.Topology topology;
    private final SideChannel side;
    private final RdmaTransport transport;
    private final JacclCollectives collectives;
    private boolean closed;

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
        FrameEngine engine = new FrameEngine(transport, rank, timeout);
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
        collectives.allReduce(in.segment(), out.segment(), in.dtype(), in.size(), op);
    }

    @Override
    public void allGather(Array in, Array out) {
        collectives.allGather(in.segment(), out.segment(), in.nbytes());
    }

    @Override
    public void sumScatter(Array in, Array out) {
        collectives.sumScatter(in.segment(), out.segment(), in.dtype(), out.size());
    }

    @Override
    public void send(Array x, int dst) {
        collectives.send(x.segment(), x.nbytes(), dst);
    }

    @Override
    public void recv(Array out, int src) {
        collectives.recv(out.segment(), out.nbytes(), src);
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            transport.close();
        } finally {
            side.close();
        }
    }
}
