package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An array whose element image lives in CUDA device memory ({@code cudaMalloc}) on one GPU: the
 * same dtype, row-major shape and little-endian bytes as an {@link Array}, but not readable from
 * the host without a copy. Made by {@link NcclGroup#allocate} and {@link NcclGroup#toDevice};
 * {@link NcclGroup}'s device collectives read and write it with no host staging.
 *
 * <p>Close it to free the memory at once ({@code cudaFree}); an unreachable, unclosed array is
 * freed by a {@link Cleaner} eventually. Copies are synchronous.
 */
public final class DeviceArray implements AutoCloseable {

    private static final Cleaner CLEANER = Cleaner.create();

    private final CudaRuntime cuda;
    private final int device;
    private final DType dtype;
    private final int[] shape;
    private final long size;
    private final Memory memory;
    private final Cleaner.Cleanable cleanable;

    /** The device allocation; freed once, by close() or by the cleaner. Holds no reference to the array. */
    private record Memory(CudaRuntime cuda, int device, MemorySegment ptr, AtomicBoolean freed) implements Runnable {
        @Override
        public void run() {
            if (freed.compareAndSet(false, true)) {
                cuda.setDevice(device);
                cuda.free(ptr);
            }
        }
    }

    DeviceArray(CudaRuntime cuda, int device, DType dtype, int[] shape) {
        this.cuda = cuda;
        this.device = device;
        this.dtype = dtype;
        this.shape = shape.clone();
        long n = 1;
        for (int d : shape) {
            if (d < 0) throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            n = Math.multiplyExact(n, d);
        }
        this.size = n;
        cuda.setDevice(device);
        MemorySegment ptr = cuda.malloc(Math.multiplyExact(n, (long) dtype.itemSize()));
        Memory m = new Memory(cuda, device, ptr, new AtomicBoolean());
        this.memory = m;
        this.cleanable = CLEANER.register(this, () -> {
            try {
                m.run();
            } catch (RuntimeException ignored) {
                // best effort: the process may be shutting CUDA down
            }
        });
    }

    public DType dtype() { return dtype; }

    public int[] shape() { return shape.clone(); }

    public int ndim() { return shape.length; }

    /** Number of elements. */
    public long size() { return size; }

    /** Bytes of the element image. */
    public long nbytes() { return size * dtype.itemSize(); }

    /** The CUDA device (as this process numbers them) that holds the memory. */
    public int device() { return device; }

    /**
     * The raw device pointer, for handing to other CUDA code; not dereferenceable from Java.
     *
     * @throws IllegalStateException after {@link #close()}
     */
    public MemorySegment devicePointer() {
        checkOpen();
        return memory.ptr();
    }

    /** Copies {@code host} (same dtype and element count) into this array. */
    public void copyFrom(Array host) {
        checkMatches(host, "copy from");
        checkOpen();
        if (nbytes() == 0) return;
        cuda.setDevice(device);
        withNative(host, false, seg -> cuda.memcpy(memory.ptr(), seg, nbytes(), CudaRuntime.HOST_TO_DEVICE));
    }

    /** Copies this array into {@code host} (same dtype and element count). */
    public void copyTo(Array host) {
        checkMatches(host, "copy to");
        checkOpen();
        if (nbytes() == 0) return;
        cuda.setDevice(device);
        withNative(host, true, seg -> cuda.memcpy(seg, memory.ptr(), nbytes(), CudaRuntime.DEVICE_TO_HOST));
    }

    /** A new host array with this array's dtype, shape and values. */
    public Array toHost() {
        Array a = Array.zeros(dtype, shape);
        copyTo(a);
        return a;
    }

    /** Frees the device memory now ({@code cudaFree}; its error, if any, is thrown). Idempotent. */
    @Override
    public void close() {
        try {
            memory.run();
        } finally {
            cleanable.clean();
        }
    }

    boolean isClosed() { return memory.freed().get(); }

    CudaRuntime cuda() { return cuda; }

    void checkOpen() {
        if (memory.freed().get()) throw new IllegalStateException("this DeviceArray was closed; its device memory is freed");
    }

    private void checkMatches(Array host, String what) {
        if (host.dtype() != dtype || host.size() != size) {
            throw new IllegalArgumentException("cannot " + what + " a host array of " + host.dtype() + " "
                    + Arrays.toString(host.shape()) + ": this device array is " + dtype + " " + Arrays.toString(shape));
        }
    }

    /** Runs {@code copy} on a native view of {@code host}'s bytes (heap-backed arrays go through a native copy). */
    static void withNative(Array host, boolean writeBack, java.util.function.Consumer<MemorySegment> copy) {
        MemorySegment seg = host.segment();
        if (seg.isNative()) {
            copy.accept(seg);
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment tmp = a.allocate(Math.max(1, seg.byteSize()), 16).asSlice(0, seg.byteSize());
            if (!writeBack) tmp.copyFrom(seg);
            copy.accept(tmp);
            if (writeBack) seg.copyFrom(tmp);
        }
    }

    @Override
    public String toString() {
        return "DeviceArray(" + dtype + " " + Arrays.toString(shape) + " on cuda:" + device + (isClosed() ? ", closed)" : ")");
    }
}
