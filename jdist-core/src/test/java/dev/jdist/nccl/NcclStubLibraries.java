package dev.jdist.nccl;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.Requirements;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Builds the stand-in libcudart and libnccl from src/test/c with gcc (once per JVM) and exposes
 * their test controls. Point the backend at them with {@link #env()}. What the stubs model (non-blocking
 * creation, work completing on the stream, asynchronous errors, abort, ranks as processes meeting in a
 * directory) is described at the top of nccl_stub.c.
 */
final class NcclStubLibraries {

    private static NcclStubLibraries instance;

    final Path cudart;
    final Path nccl;
    private final MethodHandle cudaFail;
    private final MethodHandle ncclFail;
    private final MethodHandle setDevices;
    private final MethodHandle cudaLive;
    private final MethodHandle ncclLive;
    private final MethodHandle splitConfigNull;
    private final MethodHandle aborts;
    private final MethodHandle finalizes;
    private final MethodHandle lastInitBlocking;
    private final MethodHandle hang;
    private final MethodHandle asyncError;

    private NcclStubLibraries(Path cudart, Path nccl) {
        this.cudart = cudart;
        this.nccl = nccl;
        Linker linker = Linker.nativeLinker();
        SymbolLookup c = SymbolLookup.libraryLookup(cudart, Arena.global());
        SymbolLookup n = SymbolLookup.libraryLookup(nccl, Arena.global());
        cudaFail = linker.downcallHandle(c.find("jdist_stub_cuda_fail").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));
        setDevices = linker.downcallHandle(c.find("jdist_stub_set_devices").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT));
        cudaLive = linker.downcallHandle(c.find("jdist_stub_cuda_live").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        ncclFail = linker.downcallHandle(n.find("jdist_stub_nccl_fail").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));
        ncclLive = linker.downcallHandle(n.find("jdist_stub_nccl_live").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        aborts = linker.downcallHandle(n.find("jdist_stub_nccl_aborts").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        splitConfigNull = linker.downcallHandle(n.find("jdist_stub_nccl_last_split_config_null").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT));
        finalizes = linker.downcallHandle(n.find("jdist_stub_nccl_finalizes").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        lastInitBlocking = linker.downcallHandle(n.find("jdist_stub_nccl_last_init_blocking").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT));
        hang = linker.downcallHandle(n.find("jdist_stub_nccl_hang").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));
        asyncError = linker.downcallHandle(n.find("jdist_stub_nccl_async_error").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_INT));
    }

    /** The stubs, built on first use; skips (or fails under CI=true) when gcc is missing. */
    static synchronized NcclStubLibraries get() throws IOException, InterruptedException {
        if (instance != null) return instance;
        Requirements.require(gccWorks(), "gcc (with libc6-dev) is missing; install it (bin/test installs gcc and libc6-dev)");
        Path src = Path.of("src/test/c").toAbsolutePath();
        Path target = Path.of("target").toAbsolutePath();
        Files.createDirectories(target);
        Path dir = Files.createTempDirectory(target, "nccl-stub-");
        Path cudart = dir.resolve("libjdist_stub_cudart.so");
        Path nccl = dir.resolve("libjdist_stub_nccl.so");
        gcc(List.of("gcc", "-O1", "-Wall", "-shared", "-fPIC", "-Wl,-soname,libjdist_stub_cudart.so", "-o",
                cudart.toString(), src.resolve("cudart_stub.c").toString(), "-lpthread"));
        gcc(List.of("gcc", "-O1", "-Wall", "-shared", "-fPIC", "-o", nccl.toString(),
                src.resolve("nccl_stub.c").toString(), "-L" + dir, "-l:libjdist_stub_cudart.so",
                "-Wl,-rpath," + dir, "-lpthread"));
        instance = new NcclStubLibraries(cudart, nccl);
        return instance;
    }

    private static boolean gccWorks() {
        return CommandResult.run(Duration.ofSeconds(30), "gcc", "--version").ok();
    }

    private static void gcc(List<String> cmd) throws IOException {
        CommandResult r = CommandResult.run(Duration.ofSeconds(120), null, Map.of(), null, cmd);
        if (!r.ok()) throw new IOException("gcc failed: " + r);
    }

    /** The library-path variables that point the backend at the stubs. */
    Map<String, String> env() {
        Map<String, String> env = new HashMap<>();
        env.put(NativeLibraries.NCCL_LIBRARY_ENV, nccl.toString());
        env.put(NativeLibraries.CUDART_LIBRARY_ENV, cudart.toString());
        return env;
    }

    /** Makes the named CUDA function fail from now on ("" for none). */
    void failCuda(String function) { withString(cudaFail, function); }

    /** Makes the named NCCL function fail from now on ("" for none). */
    void failNccl(String function) { withString(ncclFail, function); }

    void setDevices(int n) {
        try {
            setDevices.invoke(n);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Stub allocations and streams alive. */
    int cudaLive() { return callInt(cudaLive); }

    /** Stub communicators alive. */
    int ncclLive() { return callInt(ncclLive); }

    /** ncclCommAbort calls so far. */
    int aborts() { return callInt(aborts); }

    /** 1 when the last ncclCommSplit got a NULL config, 0 when not, -1 before any split. */
    int lastSplitConfigNull() { return callInt(splitConfigNull); }

    /** ncclCommFinalize calls so far. */
    int finalizes() { return callInt(finalizes); }

    /** config->blocking of the last ncclCommInitRankConfig (-2: ncclCommInitRank without a config). */
    int lastInitBlocking() { return callInt(lastInitBlocking); }

    /** Makes the named collective never complete on its stream (until the communicator is aborted); "" for none. */
    void hangNccl(String collective) { withString(hang, collective); }

    /** Makes ncclCommGetAsyncError answer {@code code} for every initialised communicator (0: none). */
    void asyncError(int code) {
        try {
            asyncError.invoke(code);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    void reset() {
        failCuda("");
        failNccl("");
        hangNccl("");
        asyncError(0);
        setDevices(1);
    }

    private static int callInt(MethodHandle h) {
        try {
            return (int) h.invoke();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static void withString(MethodHandle h, String s) {
        try (Arena a = Arena.ofConfined()) {
            h.invoke(a.allocateFrom(s));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }
}
