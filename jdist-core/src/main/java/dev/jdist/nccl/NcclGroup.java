package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;
import dev.jdist.spi.GroupImpl;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One NCCL communicator on one GPU, with its CUDA stream (spec §6.4).
 *
 * <p>Host {@link Array}s reach it through {@link Group} and are staged: copied into device buffers
 * that this group keeps and reuses (growing them when an array is larger than any before), reduced
 * or gathered by NCCL on the group's stream, and copied back; each call returns when the result is
 * in host memory.
 *
 * <p>{@link DeviceArray}s skip the staging: {@link #allSum(DeviceArray)}, {@link #allGather(DeviceArray)}
 * and the rest hand device pointers straight to NCCL. They always call NCCL, also in a 1-rank group
 * (unlike {@link Group}, whose 1-rank collectives return their input), and return once the stream
 * has finished. Get this object from a group with {@link #of(Group)}.
 *
 * <p>All calls on one group run one at a time. NCCL accepts int8, uint8, int32, uint32, int64, uint64,
 * float16, float32, float64 and bfloat16; bool, int16, uint16 and complex64 are an
 * {@link IllegalArgumentException}. NCCL and CUDA failures are {@link DistributedException}s that
 * carry NCCL's or CUDA's error string; after an NCCL failure the communicator is aborted when closed.
 */
public final class NcclGroup implements GroupImpl {

    private final NcclNatives natives;
    private final CudaRuntime cuda;
    private final NcclApi nccl;
    private final int device;
    private final int rank;
    private final int size;
    private final ReentrantLock lock = new ReentrantLock(true);
    private MemorySegment comm;
    private MemorySegment stream;
    private MemorySegment sendBuf = MemorySegment.NULL;
    private long sendCap;
    private MemorySegment recvBuf = MemorySegment.NULL;
    private long recvCap;
    private boolean failed;
    private boolean closed;

    NcclGroup(NcclNatives natives, int device, MemorySegment comm, MemorySegment stream) {
        this.natives = natives;
        this.cuda = natives.cuda();
        this.nccl = natives.nccl();
        this.device = device;
        this.comm = comm;
        this.stream = stream;
        this.rank = nccl.commUserRank(comm);
        this.size = nccl.commCount(comm);
    }

    /**
     * The NCCL side of {@code group}, for device-memory collectives.
     *
     * @throws IllegalArgumentException when {@code group} is not an nccl group
     */
    public static NcclGroup of(Group group) {
        if (group.impl() instanceof NcclGroup g) return g;
        throw new IllegalArgumentException("this is a '" + group.backend() + "' group, not an nccl group; form it with "
                + "Distributed.init(true, \"nccl\") under `jdist launch --backend nccl`");
    }

    @Override
    public int rank() { return rank; }

    @Override
    public int size() { return size; }

    @Override
    public String backendName() { return "nccl"; }

    /** The CUDA device (as this process numbers them) this group's communicator uses. */
    public int device() { return device; }

    // ------------------------------------------------------------------------------------ split

    @Override
    public NcclGroup split(int color, int key) {
        lock.lock();
        try {
            checkOpen();
            cuda.setDevice(device);
            MemorySegment child = guarded(() -> nccl.commSplit(comm, color, key));
            if (child.equals(MemorySegment.NULL)) {
                throw new DistributedException("ncclCommSplit(color=" + color + ") gave rank " + rank + " no communicator");
            }
            MemorySegment childStream;
            try {
                childStream = cuda.streamCreate();
            } catch (RuntimeException e) {
                nccl.commDestroy(child);
                throw e;
            }
            return new NcclGroup(natives, device, child, childStream);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------ host arrays (staged)

    @Override
    public void allReduce(Array in, Array out, ReduceOp op) {
        int type = NcclTypes.dataType(in.dtype(), opName(op));
        int redOp = NcclTypes.redOp(op);
        long count = in.size();
        staged(in, out, (s, r) -> nccl.allReduce(s, r, count, type, redOp, comm, stream));
    }

    @Override
    public void allGather(Array in, Array out) {
        int type = NcclTypes.dataType(in.dtype(), "all_gather");
        long count = in.size();
        staged(in, out, (s, r) -> nccl.allGather(s, r, count, type, comm, stream));
    }

    @Override
    public void sumScatter(Array in, Array out) {
        int type = NcclTypes.dataType(in.dtype(), "sum_scatter");
        long count = out.size();
        staged(in, out, (s, r) -> nccl.reduceScatter(s, r, count, type, NcclApi.SUM, comm, stream));
    }

    @Override
    public void send(Array x, int dst) {
        throw new UnsupportedCollectiveException("the nccl backend has no send/recv (MLX's neither); use the ring or "
                + "mpi backend for point-to-point transfers");
    }

    @Override
    public void recv(Array out, int src) {
        throw new UnsupportedCollectiveException("the nccl backend has no send/recv (MLX's neither); use the ring or "
                + "mpi backend for point-to-point transfers");
    }

    private interface DeviceOp {
        void run(MemorySegment send, MemorySegment recv);
    }

    /** Host → staging buffer → NCCL → staging buffer → host, all on this group's stream. */
    private void staged(Array in, Array out, DeviceOp op) {
        lock.lock();
        try {
            checkOpen();
            if (in.nbytes() == 0 && out.nbytes() == 0) return;
            cuda.setDevice(device);
            ensureStaging(in.nbytes(), out.nbytes());
            MemorySegment s = sendBuf;
            MemorySegment r = recvBuf;
            DeviceArray.withNative(in, false, src ->
                    cuda.memcpyAsync(s, src, in.nbytes(), CudaRuntime.HOST_TO_DEVICE, stream));
            guarded(() -> { op.run(s, r); return null; });
            DeviceArray.withNative(out, true, dst -> {
                cuda.memcpyAsync(dst, r, out.nbytes(), CudaRuntime.DEVICE_TO_HOST, stream);
                cuda.streamSynchronize(stream);
            });
        } finally {
            lock.unlock();
        }
    }

    private void ensureStaging(long sendBytes, long recvBytes) {
        if (sendBytes > sendCap || sendBuf.equals(MemorySegment.NULL)) {
            if (!sendBuf.equals(MemorySegment.NULL)) cuda.free(sendBuf);
            sendBuf = MemorySegment.NULL;
            sendCap = 0;
            long cap = roundUp(sendBytes);
            sendBuf = cuda.malloc(cap);
            sendCap = cap;
        }
        if (recvBytes > recvCap || recvBuf.equals(MemorySegment.NULL)) {
            if (!recvBuf.equals(MemorySegment.NULL)) cuda.free(recvBuf);
            recvBuf = MemorySegment.NULL;
            recvCap = 0;
            long cap = roundUp(recvBytes);
            recvBuf = cuda.malloc(cap);
            recvCap = cap;
        }
    }

    private static long roundUp(long bytes) {
        long min = 4096;
        return bytes <= min ? min : ((bytes + min - 1) / min) * min;
    }

    // ------------------------------------------------------------------------------------ device arrays

    /** A new, uninitialised device array on this group's GPU. */
    public DeviceArray allocate(DType dtype, int... shape) {
        return new DeviceArray(cuda, device, dtype, shape);
    }

    /** A new device array on this group's GPU holding a copy of {@code host}. */
    public DeviceArray toDevice(Array host) {
        DeviceArray d = allocate(host.dtype(), host.shape());
        try {
            d.copyFrom(host);
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
        return d;
    }

    public DeviceArray allSum(DeviceArray x) { return allReduce(x, ReduceOp.SUM); }

    public DeviceArray allMax(DeviceArray x) { return allReduce(x, ReduceOp.MAX); }

    public DeviceArray allMin(DeviceArray x) { return allReduce(x, ReduceOp.MIN); }

    /** Element-wise reduction over ranks into a new device array of {@code x}'s dtype and shape. */
    public DeviceArray allReduce(DeviceArray x, ReduceOp op) {
        NcclTypes.dataType(x.dtype(), opName(op));
        DeviceArray out = allocate(x.dtype(), x.shape());
        return fillOrClose(out, () -> allReduce(x, out, op));
    }

    /** Element-wise reduction over ranks of {@code in} into {@code out} (same dtype and size; may be {@code in}). */
    public void allReduce(DeviceArray in, DeviceArray out, ReduceOp op) {
        int type = NcclTypes.dataType(in.dtype(), opName(op));
        checkSame(in, out, in.size(), opName(op));
        int redOp = NcclTypes.redOp(op);
        onDevice(in, out, () -> nccl.allReduce(in.devicePointer(), out.devicePointer(), in.size(), type, redOp, comm, stream));
    }

    /** Every rank's {@code x} concatenated along axis 0 ({@code [n]} for a 0-d {@code x}) in a new device array. */
    public DeviceArray allGather(DeviceArray x) {
        int type = NcclTypes.dataType(x.dtype(), "all_gather");
        int[] shape = x.shape();
        int[] outShape;
        if (shape.length == 0) {
            outShape = new int[] {size};
        } else {
            outShape = shape.clone();
            outShape[0] = Math.multiplyExact(shape[0], size);
        }
        DeviceArray out = allocate(x.dtype(), outShape);
        return fillOrClose(out, () -> onDevice(x, out,
                () -> nccl.allGather(x.devicePointer(), out.devicePointer(), x.size(), type, comm, stream)));
    }

    /** Rows {@code [r*d0/n, (r+1)*d0/n)} of the element-wise sum over ranks, in a new device array. */
    public DeviceArray sumScatter(DeviceArray x) {
        int type = NcclTypes.dataType(x.dtype(), "sum_scatter");
        if (x.ndim() == 0 || x.shape()[0] % size != 0) {
            throw new IllegalArgumentException("sum_scatter needs an input with at least one axis whose first dimension "
                    + "divides by the group size " + size + "; got shape " + Arrays.toString(x.shape()));
        }
        int[] outShape = x.shape();
        outShape[0] /= size;
        DeviceArray out = allocate(x.dtype(), outShape);
        return fillOrClose(out, () -> onDevice(x, out,
                () -> nccl.reduceScatter(x.devicePointer(), out.devicePointer(), out.size(), type, NcclApi.SUM, comm, stream)));
    }

    private static DeviceArray fillOrClose(DeviceArray out, Runnable fill) {
        try {
            fill.run();
            return out;
        } catch (RuntimeException e) {
            out.close();
            throw e;
        }
    }

    private void checkSame(DeviceArray in, DeviceArray out, long outElements, String op) {
        if (out.dtype() != in.dtype() || out.size() != outElements) {
            throw new IllegalArgumentException(op + ": output " + out + " must be " + in.dtype() + " with " + outElements
                    + " elements to match input " + in);
        }
    }

    private void onDevice(DeviceArray in, DeviceArray out, Runnable op) {
        for (DeviceArray d : new DeviceArray[] {in, out}) {
            d.checkOpen();
            if (d.device() != device || d.cuda() != cuda) {
                throw new IllegalArgumentException(d + " is not on this group's device cuda:" + device
                        + "; copy it with toDevice(array.toHost())");
            }
        }
        lock.lock();
        try {
            checkOpen();
            if (in.nbytes() == 0 && out.nbytes() == 0) return;
            cuda.setDevice(device);
            guarded(() -> { op.run(); return null; });
            cuda.streamSynchronize(stream);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------ lifecycle

    private <T> T guarded(java.util.function.Supplier<T> ncclCall) {
        try {
            return ncclCall.get();
        } catch (DistributedException e) {
            failed = true;
            throw new DistributedException("nccl rank " + rank + " of " + size + " (cuda:" + device + "): " + e.getMessage(), e);
        }
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("this nccl group is closed");
    }

    /** Destroys the communicator (aborts it after an NCCL failure), frees the staging buffers and the stream. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) return;
            closed = true;
            RuntimeException first = null;
            try {
                cuda.setDevice(device);
            } catch (RuntimeException e) {
                first = e;
            }
            try {
                if (failed) nccl.commAbort(comm); else nccl.commDestroy(comm);
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
            for (MemorySegment buf : new MemorySegment[] {sendBuf, recvBuf}) {
                if (buf.equals(MemorySegment.NULL)) continue;
                try {
                    cuda.free(buf);
                } catch (RuntimeException e) {
                    if (first == null) first = e;
                }
            }
            try {
                cuda.streamDestroy(stream);
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
            sendBuf = recvBuf = comm = stream = MemorySegment.NULL;
            if (first != null) throw first;
        } finally {
            lock.unlock();
        }
    }

    private static String opName(ReduceOp op) {
        return switch (op) {
            case SUM -> "all_sum";
            case MAX -> "all_max";
            case MIN -> "all_min";
        };
    }

    @Override
    public String toString() {
        return "NcclGroup(rank " + rank + " of " + size + ", cuda:" + device + ")";
    }
}
