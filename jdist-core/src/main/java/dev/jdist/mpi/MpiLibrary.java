package dev.jdist.mpi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * libmpi bound with {@code java.lang.foreign}: the library is opened with {@code dlopen(RTLD_NOW |
 * RTLD_GLOBAL)} (Open MPI's plugins need its symbols global, as MLX does), its family is recognised,
 * and every function jdist calls becomes a downcall whose handle parameters are Java {@code long}s
 * whatever the {@link MpiAbi} (pointer or {@code int}).
 */
final class MpiLibrary {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout PTR = ValueLayout.ADDRESS;
    /** Marks a handle parameter in {@link #bind}. */
    private static final Object H = new Object();
    private static final MethodHandle OF_ADDRESS;

    static {
        try {
            OF_ADDRESS = MethodHandles.lookup().findStatic(MemorySegment.class, "ofAddress",
                    MethodType.methodType(MemorySegment.class, long.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final String name;
    final String version;
    final MpiAbi abi;
    private final SymbolLookup lookup;

    final MethodHandle getLibraryVersion, initThread, initialized, finalized, finalize, commRank, commSize,
            commSplit, commFree, commSetErrhandler, errorString, getCount, typeContiguous, typeCommit, typeFree,
            opCreate, opFree;
    /** The nonblocking calls every operation is made of (polled with {@link #test}), and the way out. */
    final MethodHandle iallreduce, iallgather, ireduceScatterBlock, isend, irecv, ibarrier, test, abort;
    /** The nonblocking calls of the operations MLX lacks (docs/reference/collectives.md §13.8). */
    final MethodHandle ibcast, ialltoall, ialltoallv, igather, iscatter;

    private MpiLibrary(String name, SymbolLookup lookup) {
        this.name = name;
        this.lookup = lookup;
        getLibraryVersion = bindRaw("MPI_Get_library_version", PTR, PTR);
        this.version = readVersion();
        if (lookup.find("ompi_mpi_comm_world").isPresent()) {
            abi = new OpenMpiAbi(lookup, name);
        } else if (version.contains("MPICH") || version.contains("Intel(R) MPI") || version.contains("MVAPICH")) {
            abi = new MpichAbi();
        } else {
            throw new MpiLoadException(name + " identifies itself as '" + firstLine(version) + "', whose handle ABI jdist "
                    + "does not know; jdist supports Open MPI 4/5 and MPICH-ABI libraries (MPICH, Intel MPI, MVAPICH). "
                    + "Point MLX_MPI_LIBNAME at one of those");
        }
        initThread = bind("MPI_Init_thread", PTR, PTR, INT, PTR);
        initialized = bind("MPI_Initialized", PTR);
        finalized = bind("MPI_Finalized", PTR);
        finalize = bind("MPI_Finalize");
        commRank = bind("MPI_Comm_rank", H, PTR);
        commSize = bind("MPI_Comm_size", H, PTR);
        commSplit = bind("MPI_Comm_split", H, INT, INT, PTR);
        commFree = bind("MPI_Comm_free", PTR);
        commSetErrhandler = bind("MPI_Comm_set_errhandler", H, H);
        errorString = bind("MPI_Error_string", INT, PTR, PTR);
        // The last PTR of each nonblocking call is its MPI_Request* (a handle of the ABI's layout).
        iallreduce = bind("MPI_Iallreduce", PTR, PTR, INT, H, H, H, PTR);
        iallgather = bind("MPI_Iallgather", PTR, INT, H, PTR, INT, H, H, PTR);
        ireduceScatterBlock = bind("MPI_Ireduce_scatter_block", PTR, PTR, INT, H, H, H, PTR);
        isend = bind("MPI_Isend", PTR, INT, H, INT, INT, H, PTR);
        irecv = bind("MPI_Irecv", PTR, INT, H, INT, INT, H, PTR);
        ibarrier = bind("MPI_Ibarrier", H, PTR);
        ibcast = bind("MPI_Ibcast", PTR, INT, H, INT, H, PTR);
        ialltoall = bind("MPI_Ialltoall", PTR, INT, H, PTR, INT, H, H, PTR);
        ialltoallv = bind("MPI_Ialltoallv", PTR, PTR, PTR, H, PTR, PTR, PTR, H, H, PTR);
        igather = bind("MPI_Igather", PTR, INT, H, PTR, INT, H, INT, H, PTR);
        iscatter = bind("MPI_Iscatter", PTR, INT, H, PTR, INT, H, INT, H, PTR);
        test = bind("MPI_Test", PTR, PTR, PTR);
        abort = bind("MPI_Abort", H, INT);
        getCount = bind("MPI_Get_count", PTR, H, PTR);
        typeContiguous = bind("MPI_Type_contiguous", INT, H, PTR);
        typeCommit = bind("MPI_Type_commit", PTR);
        opCreate = bind("MPI_Op_create", PTR, INT, PTR);
        typeFree = bind("MPI_Type_free", PTR);
        opFree = bind("MPI_Op_free", PTR);
    }

    /** One attempt per candidate; the first library that loads and is recognised wins. */
    static MpiLibrary load(MpiLibraryLocator.Candidates candidates) {
        keepJvmSignalHandlers();
        List<String> failures = new ArrayList<>();
        for (String candidate : candidates.names()) {
            Optional<SymbolLookup> lookup;
            try {
                lookup = dlopenGlobal(candidate, failures);
            } catch (RuntimeException | LinkageError e) {
                failures.add(candidate + ": " + e);
                continue;
            }
            if (lookup.isEmpty()) continue;
            try {
                return new MpiLibrary(candidate, lookup.get());
            } catch (MpiLoadException e) {
                failures.add(e.getMessage());
                if (candidates.fromVariable()) break;
            }
        }
        if (candidates.fromVariable()) {
            throw new MpiLoadException(candidates.variable() + "=" + candidates.names().getFirst()
                    + " could not be used as the MPI library: " + String.join("; ", failures)
                    + ". Set " + candidates.variable() + " to the file name or path of an Open MPI or MPICH library "
                    + "(for example libmpi.so.40, /usr/lib/x86_64-linux-gnu/libmpich.so.12 or /opt/homebrew/lib/libmpi.40.dylib), "
                    + "or unset it to let jdist search the usual names");
        }
        throw new MpiLoadException("no MPI library found; tried " + String.join("; ", failures)
                + ". Install Open MPI or MPICH (Debian/Ubuntu: apt-get install openmpi-bin or mpich; macOS: brew install open-mpi), "
                + "or set MLX_MPI_LIBNAME to the path of libmpi");
    }

    // ---------------------------------------------------------------- dlopen

    /**
     * UCX (used by MPICH's ch4:ucx and Open MPI's pml/ucx) installs SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers
     * when it loads; the JVM uses SIGSEGV for implicit null checks, so the first NullPointerException in
     * compiled code would then kill the process. {@code UCX_ERROR_SIGNALS=""} (what UCX's own Java
     * binding does) keeps the JVM's handlers; a value the user set is left alone.
     */
    private static void keepJvmSignalHandlers() {
        try {
            MethodHandle setenv = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("setenv"),
                    FunctionDescriptor.of(INT, PTR, PTR, INT));
            try (Arena arena = Arena.ofConfined()) {
                int ignored = (int) setenv.invokeExact(arena.allocateFrom("UCX_ERROR_SIGNALS"), arena.allocateFrom(""), 0);
            }
        } catch (Throwable t) {
            // best effort: without setenv the library still loads
        }
    }

    private static final int RTLD_NOW = 2;

    private static int rtldGlobal() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        return os.contains("mac") || os.contains("darwin") ? 0x8 : 0x100;
    }

    /** {@code dlopen(name, RTLD_NOW|RTLD_GLOBAL)}; on failure records dlerror() and returns empty. */
    private static Optional<SymbolLookup> dlopenGlobal(String name, List<String> failures) throws LinkageError {
        SymbolLookup libc = LINKER.defaultLookup();
        MethodHandle dlopen = LINKER.downcallHandle(libc.findOrThrow("dlopen"), FunctionDescriptor.of(PTR, PTR, INT));
        MethodHandle dlerror = LINKER.downcallHandle(libc.findOrThrow("dlerror"), FunctionDescriptor.of(PTR));
        MethodHandle dlsym = LINKER.downcallHandle(libc.findOrThrow("dlsym"), FunctionDescriptor.of(PTR, PTR, PTR));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = (MemorySegment) dlopen.invokeExact(arena.allocateFrom(name), RTLD_NOW | rtldGlobal());
            if (handle.equals(MemorySegment.NULL)) {
                MemorySegment err = (MemorySegment) dlerror.invokeExact();
                failures.add(name + " (" + (err.equals(MemorySegment.NULL) ? "dlopen failed"
                        : err.reinterpret(4096).getString(0)) + ")");
                return Optional.empty();
            }
            // The handle is never closed: MPI stays loaded for the life of the process.
            return Optional.of(symbol -> {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment p = (MemorySegment) dlsym.invokeExact(handle, a.allocateFrom(symbol));
                    return p.equals(MemorySegment.NULL) ? Optional.empty() : Optional.of(p);
                } catch (Throwable t) {
                    return Optional.empty();
                }
            });
        } catch (Throwable t) {
            if (t instanceof LinkageError le) throw le;
            failures.add(name + " (" + t + ")");
            return Optional.empty();
        }
    }

    // ---------------------------------------------------------------- binding

    private MemorySegment symbol(String fn) {
        return lookup.find(fn).orElseThrow(() -> new MpiLoadException(name + " does not export " + fn
                + (abi == null ? "; it is not an MPI library" : "; it is not a complete MPI-3 library")));
    }

    private MethodHandle bindRaw(String fn, MemoryLayout... args) {
        return LINKER.downcallHandle(symbol(fn), FunctionDescriptor.of(INT, args));
    }

    /** A downcall returning {@code int}; {@link #H} parameters take a Java {@code long} handle. */
    private MethodHandle bind(String fn, Object... args) {
        MemoryLayout[] layouts = new MemoryLayout[args.length];
        for (int i = 0; i < args.length; i++) layouts[i] = args[i] == H ? abi.handleLayout() : (MemoryLayout) args[i];
        MethodHandle mh = LINKER.downcallHandle(symbol(fn), FunctionDescriptor.of(INT, layouts));
        for (int i = 0; i < args.length; i++) {
            if (args[i] != H) continue;
            if (abi.handleLayout() instanceof ValueLayout.OfInt) {
                mh = MethodHandles.explicitCastArguments(mh, mh.type().changeParameterType(i, long.class));
            } else {
                mh = MethodHandles.filterArguments(mh, i, OF_ADDRESS);
            }
        }
        return mh;
    }

    private String readVersion() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(8192);
            MemorySegment len = arena.allocate(INT);
            int rc = (int) getLibraryVersion.invokeExact(buf, len);
            if (rc != 0) return "(MPI_Get_library_version failed with " + rc + ")";
            int n = Math.clamp(len.get(INT, 0), 0, 8191);
            return new String(buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8).strip();
        } catch (Throwable t) {
            throw new MpiLoadException(name + ": MPI_Get_library_version failed: " + t);
        }
    }

    static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return (nl < 0 ? s : s.substring(0, nl)).strip();
    }

    /** MPI's own text for an error code ({@code MPI_Error_string}). */
    String errorString(int code) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1024);
            MemorySegment len = arena.allocate(INT);
            int rc = (int) errorString.invokeExact(code, buf, len);
            if (rc != 0) return "unknown MPI error";
            int n = Math.clamp(len.get(INT, 0), 0, 1023);
            return new String(buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8).strip();
        } catch (Throwable t) {
            return "unknown MPI error (MPI_Error_string failed: " + t + ")";
        }
    }

    @Override
    public String toString() {
        return name + " (" + firstLine(version) + ")";
    }

    /** For messages and logs: the names in {@code env} that steered discovery. */
    static String describeEnv(Map<String, String> env) {
        return "MLX_MPI_LIBNAME=" + env.getOrDefault("MLX_MPI_LIBNAME", "(unset)")
                + ", MPI_LIBNAME=" + env.getOrDefault("MPI_LIBNAME", "(unset)");
    }
}
