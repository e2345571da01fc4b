package dev.jdist.nccl;

import dev.jdist.DistributedException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The few CUDA runtime calls jdist needs, bound with java.lang.foreign. Every call that returns a
 * {@code cudaError_t} other than {@code cudaSuccess} becomes a {@link DistributedException} carrying
 * CUDA's own error string ({@code cudaGetErrorString}).
 *
 * <p>CUDA's "current device" is per host thread, so callers select the device ({@link #setDevice})
 * at the start of every call sequence, on the thread that runs it.
 */
final class CudaRuntime {

    /** {@code cudaMemcpyKind}. */
    static final int HOST_TO_DEVICE = 1;
    static final int DEVICE_TO_HOST = 2;
    static final int DEVICE_TO_DEVICE = 3;
    /** {@code cudaErrorNotReady}: what {@link #streamQuery} answers while work is still queued. */
    static final int NOT_READY = 600;

    private final String libraryName;
    private final MethodHandle getDeviceCount;   // cudaError_t (int*)
    private final MethodHandle setDevice;        // (int)
    private final MethodHandle malloc;           // (void**, size_t)
    private final MethodHandle free;             // (void*)
    private final MethodHandle memcpy;           // (void*, const void*, size_t, kind)
    private final MethodHandle memcpyAsync;      // (void*, const void*, size_t, kind, stream)
    private final MethodHandle streamCreate;     // (cudaStream_t*)
    private final MethodHandle streamSynchronize;// (stream)
    private final MethodHandle streamQuery;      // (stream)
    private final MethodHandle streamDestroy;    // (stream)
    private final MethodHandle getErrorString;   // const char* (cudaError_t)

    CudaRuntime(NativeLibraries.Opened lib) {
        this.libraryName = lib.name();
        Linker linker = Linker.nativeLinker();
        getDeviceCount = bind(linker, lib, "cudaGetDeviceCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        setDevice = bind(linker, lib, "cudaSetDevice", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        malloc = bind(linker, lib, "cudaMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        free = bind(linker, lib, "cudaFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        memcpy = bind(linker, lib, "cudaMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        memcpyAsync = bind(linker, lib, "cudaMemcpyAsync",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        streamCreate = bind(linker, lib, "cudaStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        streamSynchronize = bind(linker, lib, "cudaStreamSynchronize", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        streamQuery = bind(linker, lib, "cudaStreamQuery", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        streamDestroy = bind(linker, lib, "cudaStreamDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getErrorString = bind(linker, lib, "cudaGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    static MethodHandle bind(Linker linker, NativeLibraries.Opened lib, String symbol, FunctionDescriptor fd) {
        MemorySegment addr = lib.lookup().find(symbol).orElseThrow(() -> new UnsatisfiedLinkError(
                "symbol " + symbol + " not found in " + lib.name() + "; the library is too old or not the one jdist "
                + "expects (override with " + NativeLibraries.NCCL_LIBRARY_ENV + " / " + NativeLibraries.CUDART_LIBRARY_ENV + ")"));
        return linker.downcallHandle(addr, fd);
    }

    String libraryName() { return libraryName; }

    int deviceCount() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            int rc = rc(() -> (int) getDeviceCount.invokeExact(out));
            if (rc != 0) throw failure("cudaGetDeviceCount", rc);
            return out.get(JAVA_INT, 0);
        }
    }

    void setDevice(int device) {
        int rc = rc(() -> (int) setDevice.invokeExact(device));
        if (rc != 0) throw failure("cudaSetDevice(" + device + ")", rc);
    }

    /** Device memory of {@code bytes} bytes (at least 1, so a pointer always exists). */
    MemorySegment malloc(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            long n = Math.max(bytes, 1);
            int rc = rc(() -> (int) malloc.invokeExact(out, n));
            if (rc != 0) throw failure("cudaMalloc(" + bytes + " bytes)", rc);
            return out.get(ADDRESS, 0);
        }
    }

    void free(MemorySegment devicePtr) {
        int rc = rc(() -> (int) free.invokeExact(devicePtr));
        if (rc != 0) throw failure("cudaFree", rc);
    }

    void memcpy(MemorySegment dst, MemorySegment src, long bytes, int kind) {
        if (bytes == 0) return;
        int rc = rc(() -> (int) memcpy.invokeExact(dst, src, bytes, kind));
        if (rc != 0) throw failure("cudaMemcpy(" + bytes + " bytes, " + kindName(kind) + ")", rc);
    }

    void memcpyAsync(MemorySegment dst, MemorySegment src, long bytes, int kind, MemorySegment stream) {
        if (bytes == 0) return;
        int rc = rc(() -> (int) memcpyAsync.invokeExact(dst, src, bytes, kind, stream));
        if (rc != 0) throw failure("cudaMemcpyAsync(" + bytes + " bytes, " + kindName(kind) + ")", rc);
    }

    MemorySegment streamCreate() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int rc = rc(() -> (int) streamCreate.invokeExact(out));
            if (rc != 0) throw failure("cudaStreamCreate", rc);
            return out.get(ADDRESS, 0);
        }
    }

    void streamSynchronize(MemorySegment stream) {
        int rc = rc(() -> (int) streamSynchronize.invokeExact(stream));
        if (rc != 0) throw failure("cudaStreamSynchronize", rc);
    }

    /**
     * {@code cudaStreamQuery}: true when everything queued on {@code stream} has finished, false while it runs
     * ({@code cudaErrorNotReady}); an error of the stream's work is an exception.
     */
    boolean streamIdle(MemorySegment stream) {
        int rc = rc(() -> (int) streamQuery.invokeExact(stream));
        if (rc == 0) return true;
        if (rc == NOT_READY) return false;
        throw failure("cudaStreamQuery", rc);
    }

    void streamDestroy(MemorySegment stream) {
        int rc = rc(() -> (int) streamDestroy.invokeExact(stream));
        if (rc != 0) throw failure("cudaStreamDestroy", rc);
    }

    /** CUDA's text for an error code. */
    String errorString(int code) {
        try {
            MemorySegment s = (MemorySegment) getErrorString.invoke(code);
            return s.equals(MemorySegment.NULL) ? "unknown CUDA error" : s.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            return "CUDA error " + code;
        }
    }

    private DistributedException failure(String what, int code) {
        return new DistributedException(what + " failed: " + errorString(code) + " (cudaError " + code + ", "
                + libraryName + ")");
    }

    private static String kindName(int kind) {
        return switch (kind) {
            case HOST_TO_DEVICE -> "host to device";
            case DEVICE_TO_HOST -> "device to host";
            case DEVICE_TO_DEVICE -> "device to device";
            default -> "kind " + kind;
        };
    }

    /** A downcall returning a status code; {@code invokeExact} inside, so no boxing or argument arrays. */
    @FunctionalInterface
    interface NativeCall {
        int call() throws Throwable;
    }

    static int rc(NativeCall c) {
        try {
            return c.call();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new DistributedException("native call failed: " + t, t);
        }
    }
}
