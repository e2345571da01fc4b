package dev.jdist.mpi;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A group over one MPI communicator (spec collectives.md §5.3): {@code MPI_COMM_WORLD} for the world
 * group, or a communicator made by {@code MPI_Comm_split}. Counts above {@link #maxCount} elements
 * (C {@code int}, 2^31−1) are split into several calls; non-native (heap) arrays are staged through
 * native memory.
 */
final class MpiGroup implements GroupImpl {
    /** The largest element count one MPI call gets; tests lower it to exercise the chunked paths. */
    static volatile long maxCount = Integer.MAX_VALUE;
    private static final int TAG = 0;
    private static final int ANY_TAG = -1;

    private final MpiRuntime rt;
    private final long comm;
    private final boolean world;
    private final int rank;
    private final int size;
    private volatile boolean closed;

    MpiGroup(MpiRuntime rt, long comm, boolean world) {
        this.rt = rt;
        this.comm = comm;
        this.world = world;
        rt.errorsReturn(comm);
        this.rank = rt.queryInt(rt.lib.commRank, comm, "MPI_Comm_rank");
        this.size = rt.queryInt(rt.lib.commSize, comm, "MPI_Comm_size");
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    @Override public String backendName() { return "mpi"; }

    private String where() { return "rank " + rank + " of " + size; }

    @Override
    public GroupImpl split(int color, int key) {
        checkOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(8);
            rt.enter();
            try {
                rt.check((int) rt.lib.commSplit.invokeExact(comm, color, key, out), "MPI_Comm_split",
                        () -> "colour " + color + ", key " + key + ", " + where());
            } finally {
                rt.exit();
            }
            return new MpiGroup(rt, rt.abi.readHandle(out), false);
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw rt.wrap("MPI_Comm_split", t);
        }
    }

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        checkOpen();
        DType t = in.dtype();
        long e = in.size();
        if (e == 0) return;
        long type = rt.datatype(t);
        long mop = rt.op(t, op);
        int s = t.itemSize();
        boolean staged = !in.segment().isNative() || !out.segment().isNative();
        Arena arena = staged ? Arena.ofConfined() : null;   // no per-call arena on the usual (native) path
        try {
            MemorySegment dst = writable(out, arena);
            boolean inPlace = in.segment().isNative() && in.segment().address() == dst.address();
            MemorySegment src = inPlace ? dst : readable(in, arena);
            long bytes = e * s;
            for (long o = 0; o < e; o += maxCount) {
                int c = (int) Math.min(maxCount, e - o);
                MemorySegment send = inPlace ? rt.inPlace() : (c == e ? src : src.asSlice(o * s, (long) c * s));
                MemorySegment recv = c == e && dst.byteSize() == bytes ? dst : dst.asSlice(o * s, (long) c * s);
                rt.enter();
                try {
                    rt.check((int) rt.lib.allreduce.invokeExact(send, recv, c, type, mop, comm),
                            "MPI_Allreduce", () -> t + " " + op.name().toLowerCase() + " of " + c + " elements, " + where());
                } finally {
                    rt.exit();
                }
            }
            copyBack(dst, out);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Allreduce", ex);
        } finally {
            if (arena != null) arena.close();
        }
    }

    @Override
    public void allGather(Array in, Array out) {
        checkOpen();
        DType t = in.dtype();
        long e = in.size();
        if (e == 0) return;
        long type = rt.datatype(t);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = writable(out, arena);
            if (e <= maxCount) {
                gather(src, (int) e, dst, type, t);
            } else {
                // Chunk j of every rank's block goes through a staging buffer of size() chunks.
                long chunk = maxCount;
                MemorySegment stage = arena.allocate(size * chunk * s, 16);
                for (long o = 0; o < e; o += chunk) {
                    int c = (int) Math.min(chunk, e - o);
                    gather(src.asSlice(o * s, (long) c * s), c, stage, type, t);
                    for (int q = 0; q < size; q++) {
                        MemorySegment.copy(stage, (long) q * c * s, dst, (q * e + o) * s, (long) c * s);
                    }
                }
            }
            copyBack(dst, out);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Allgather", ex);
        }
    }

    private void gather(MemorySegment src, int c, MemorySegment dst, long type, DType t) throws Throwable {
        rt.enter();
        try {
            rt.check((int) rt.lib.allgather.invokeExact(src, c, type, dst, c, type, comm), "MPI_Allgather",
                    () -> t + ", " + c + " elements per rank, " + where());
        } finally {
            rt.exit();
        }
    }

    @Override
    public void sumScatter(Array in, Array out) {
        checkOpen();
        DType t = in.dtype();
        long chunkElems = out.size();
        if (chunkElems == 0) return;
        long type = rt.datatype(t);
        long mop = rt.op(t, ReduceOp.SUM);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = readable(in, arena);
            MemorySegment dst = writable(out, arena);
            if (chunkElems <= maxCount) {
                reduceScatter(src, dst, (int) chunkElems, type, mop, t);
            } else {
                // Piece [o, o+c) of every rank's chunk is packed contiguously, then reduce-scattered.
                long piece = maxCount;
                MemorySegment stage = arena.allocate(size * piece * s, 16);
                for (long o = 0; o < chunkElems; o += piece) {
                    int c = (int) Math.min(piece, chunkElems - o);
                    for (int q = 0; q < size; q++) {
                        MemorySegment.copy(src, (q * chunkElems + o) * s, stage, (long) q * c * s, (long) c * s);
                    }
                    reduceScatter(stage, dst.asSlice(o * s, (long) c * s), c, type, mop, t);
                }
            }
            copyBack(dst, out);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Reduce_scatter_block", ex);
        }
    }

    private void reduceScatter(MemorySegment src, MemorySegment dst, int c, long type, long mop, DType t) throws Throwable {
        rt.enter();
        try {
            rt.check((int) rt.lib.reduceScatterBlock.invokeExact(src, dst, c, type, mop, comm), "MPI_Reduce_scatter_block",
                    () -> t + " sum, " + c + " elements per rank, " + where());
        } finally {
            rt.exit();
        }
    }

    @Override
    public void send(Array x, int dst) {
        checkOpen();
        DType t = x.dtype();
        long e = x.size();
        long type = rt.datatype(t);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = readable(x, arena);
            long o = 0;
            do {
                int c = (int) Math.min(maxCount, e - o);
                rt.enter();
                try {
                    rt.check((int) rt.lib.send.invokeExact(src.asSlice(o * s, (long) c * s), c, type, dst, TAG, comm),
                            "MPI_Send", () -> c + " " + t + " elements to rank " + dst + ", " + where());
                } finally {
                    rt.exit();
                }
                o += c;
            } while (o < e);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Send", ex);
        }
    }

    @Override
    public void recv(Array out, int src) {
        checkOpen();
        DType t = out.dtype();
        long e = out.size();
        long type = rt.datatype(t);
        int s = t.itemSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = writable(out, arena);
            MemorySegment status = arena.allocate(rt.abi.statusSize(), 8);
            MemorySegment got = arena.allocate(ValueLayout.JAVA_INT);
            long o = 0;
            do {
                int c = (int) Math.min(maxCount, e - o);
                java.util.function.Supplier<String> what = () -> c + " " + t + " elements from rank " + src + ", " + where();
                rt.enter();
                try {
                    rt.check((int) rt.lib.recv.invokeExact(dst.asSlice(o * s, (long) c * s), c, type, src, ANY_TAG, comm, status),
                            "MPI_Recv", what);
                    rt.check((int) rt.lib.getCount.invokeExact(status, type, got), "MPI_Get_count", what);
                } finally {
                    rt.exit();
                }
                int received = got.get(ValueLayout.JAVA_INT, 0);
                if (received != c) {
                    throw new DistributedException("recv on " + where() + " expected " + c + " " + t + " elements from rank "
                            + src + " but the message held " + received + "; sender and receiver must use the same "
                            + "element count and dtype");
                }
                o += c;
            } while (o < e);
            copyBack(dst, out);
        } catch (DistributedException ex) {
            throw ex;
        } catch (Throwable ex) {
            throw rt.wrap("MPI_Recv", ex);
        }
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (world) {
            rt.finalizeMpi();
        } else if (!rt.finalized()) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment h = arena.allocate(8);
                rt.abi.writeHandle(h, comm);
                rt.enter();
                try {
                    rt.check((int) rt.lib.commFree.invokeExact(h), "MPI_Comm_free", where());
                } finally {
                    rt.exit();
                }
            } catch (DistributedException e) {
                throw e;
            } catch (Throwable t) {
                throw rt.wrap("MPI_Comm_free", t);
            }
        }
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("this MPI group (" + where() + ") is closed");
    }

    /** The array's own native memory, or a native copy of a heap array. */
    private static MemorySegment readable(Array a, Arena arena) {
        MemorySegment seg = a.segment();
        if (seg.isNative()) return seg;
        MemorySegment copy = arena.allocate(Math.max(1, seg.byteSize()), 16).asSlice(0, seg.byteSize());
        MemorySegment.copy(seg, 0, copy, 0, seg.byteSize());
        return copy;
    }

    /** The array's own native memory, or native scratch that {@link #copyBack} copies into a heap array. */
    private static MemorySegment writable(Array a, Arena arena) {
        MemorySegment seg = a.segment();
        if (seg.isNative()) return seg;
        return arena.allocate(Math.max(1, seg.byteSize()), 16).asSlice(0, seg.byteSize());
    }

    private static void copyBack(MemorySegment staged, Array out) {
        if (staged != out.segment()) MemorySegment.copy(staged, 0, out.segment(), 0, staged.byteSize());
    }
}
