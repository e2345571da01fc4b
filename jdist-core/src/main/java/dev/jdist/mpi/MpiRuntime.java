package dev.jdist.mpi;

import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.ReduceOp;
import dev.jdist.spi.NativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Process-wide MPI state (spec collectives.md §5.2): the one library, {@code MPI_Init_thread} at most
 * once, the float16/bfloat16 types and user ops created once, {@code MPI_Finalize} once. Every MPI call
 * goes through here: when the library grants less than {@code MPI_THREAD_MULTIPLE}, calls are
 * serialised with one process-wide lock.
 */
final class MpiRuntime {
    private static final System.Logger LOG = System.getLogger("dev.jdist.mpi");
    private static final Map<String, MpiLibrary> LOADED = new HashMap<>();
    private static MpiRuntime initialised;        // the runtime whose MPI_Init_thread succeeded
    private static String initFailure;             // MPI_Init_thread's error, never retried

    final MpiLibrary lib;
    final MpiAbi abi;
    private final boolean multiple;
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<DType, Long> halfTypes = new EnumMap<>(DType.class);
    private final Map<String, Long> userOps = new HashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean failed;
    private volatile boolean finalized;
    private int provided;
    private final MemorySegment inPlaceMarker;

    private MpiRuntime(MpiLibrary lib, boolean multiple) {
        this.lib = lib;
        this.abi = lib.abi;
        this.multiple = multiple;
        this.inPlaceMarker = MemorySegment.ofAddress(lib.abi.inPlace());
    }

    /** Loads (once per candidate list) the library {@code env} points at. */
    static synchronized MpiLibrary library(Map<String, String> env) {
        NativeAccess.missing("the mpi backend (libmpi)").ifPresent(m -> { throw new MpiLoadException(m); });
        MpiLibraryLocator.Candidates c = MpiLibraryLocator.candidates(env, System.getProperty("os.name", ""));
        String key = String.join("\n", c.names());
        MpiLibrary lib = LOADED.get(key);
        if (lib == null) {
            lib = MpiLibrary.load(c);
            LOADED.put(key, lib);
        }
        return lib;
    }

    /** The initialised runtime, or null before the first successful {@code MPI_Init_thread}. */
    static synchronized MpiRuntime current() { return initialised; }

    /** {@code MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided)}, at most once per process. */
    static synchronized MpiRuntime initialise(MpiLibrary lib) {
        if (initialised != null) {
            if (initialised.finalized) {
                throw new ConfigException("MPI was finalized in this process (the MPI world group was closed, e.g. by "
                        + "Distributed.reset()); MPI cannot be started twice in one process. Keep the world group open, "
                        + "or start a new process");
            }
            if (initialised.lib != lib) {
                throw new ConfigException("MPI is already initialised in this process with " + initialised.lib
                        + "; it cannot also use " + lib);
            }
            return initialised;
        }
        if (initFailure != null) throw new ConfigException(initFailure);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment flag = arena.allocate(ValueLayout.JAVA_INT);
            int rc = (int) lib.initialized.invokeExact(flag);
            boolean already = rc == 0 && flag.get(ValueLayout.JAVA_INT, 0) != 0;
            int provided;
            if (already) {
                // Someone else in this process (a native library) started MPI; use it as it is.
                provided = 0;
                LOG.log(System.Logger.Level.INFO, "MPI was already initialised in this process; jdist uses it");
            } else {
                MemorySegment prov = arena.allocate(ValueLayout.JAVA_INT);
                rc = (int) lib.initThread.invokeExact(MemorySegment.NULL, MemorySegment.NULL, lib.abi.threadMultiple(), prov);
                if (rc != 0) {
                    initFailure = "MPI could not start: MPI_Init_thread in " + lib + " failed: " + lib.errorString(rc)
                            + " (MPI error " + rc + "). Start the program with mpirun/mpiexec of the same MPI, or "
                            + "`jdist launch --backend mpi`";
                    throw new ConfigException(initFailure);
                }
                provided = prov.get(ValueLayout.JAVA_INT, 0);
            }
            MpiRuntime rt = new MpiRuntime(lib, !already && provided >= lib.abi.threadMultiple());
            rt.provided = provided;
            rt.setup();
            initialised = rt;
            Runtime.getRuntime().addShutdownHook(new Thread(rt::finalizeAtExit, "jdist-mpi-finalize"));
            return rt;
        } catch (ConfigException e) {
            throw e;
        } catch (Throwable t) {
            initFailure = "MPI could not start: MPI_Init_thread in " + lib + " failed: " + t;
            throw new ConfigException(initFailure, t);
        }
    }

    /** The 2-byte types for float16 and bfloat16 ({@code MPI_Type_contiguous(2, MPI_UINT8_T)}, committed). */
    private void setup() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            for (DType t : new DType[] {DType.FLOAT16, DType.BFLOAT16}) {
                MemorySegment out = arena.allocate(8);
                check((int) lib.typeContiguous.invokeExact(2, abi.uint8(), out), "MPI_Type_contiguous", "2-byte " + t + " type");
                check((int) lib.typeCommit.invokeExact(out), "MPI_Type_commit", t + " type");
                halfTypes.put(t, abi.readHandle(out));
            }
        }
    }

    /** The datatype handle of {@code t}. */
    long datatype(DType t) {
        Long h = halfTypes.get(t);
        return h != null ? h : abi.datatype(t);
    }

    /** The op handle for reducing {@code t} with {@code op}: predefined, or a user op created on first use. */
    long op(DType t, ReduceOp op) {
        if (!MpiUserOps.needsUserOp(t, op, abi.smallIntegerSumSaturates())) return abi.op(op);
        String key = t + "/" + op;
        synchronized (userOps) {
            Long h = userOps.get(key);
            if (h != null) return h;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(8);
                MemorySegment fn = MpiUserOps.functionPointer(op, t);
                enter();
                try {
                    check((int) lib.opCreate.invokeExact(fn, 1, out), "MPI_Op_create", t + " " + op.name().toLowerCase());
                } finally {
                    exit();
                }
                h = abi.readHandle(out);
                userOps.put(key, h);
                return h;
            } catch (DistributedException e) {
                throw e;
            } catch (Throwable e) {
                throw new DistributedException("MPI_Op_create for " + t + " failed: " + e, e);
            }
        }
    }

    boolean threadMultiple() { return multiple; }

    /** {@code MPI_IN_PLACE} as a segment. */
    MemorySegment inPlace() { return inPlaceMarker; }

    int providedThreadLevel() { return provided; }

    boolean finalized() { return finalized; }

    /** Call before an MPI function: serialises when MPI is not thread-multiple; counts calls in flight. */
    void enter() {
        if (finalized) throw new DistributedException("MPI was finalized in this process; the group can no longer be used");
        if (!multiple) lock.lock();
        inFlight.incrementAndGet();
    }

    void exit() {
        inFlight.decrementAndGet();
        if (!multiple) lock.unlock();
    }

    /**
     * Turns a non-zero MPI return code, or a failed reduction upcall, into an exception with MPI's own text.
     * The context is built only on failure (this runs once per MPI call on the hot path).
     */
    void check(int rc, String function, java.util.function.Supplier<String> context) {
        if (rc == 0 && !MpiUserOps.failed()) return;
        fail(rc, function, context.get());
    }

    void check(int rc, String function, String context) {
        if (rc == 0 && !MpiUserOps.failed()) return;
        fail(rc, function, context);
    }

    private void fail(int rc, String function, String context) {
        Throwable upcall = MpiUserOps.takeFailure();
        if (rc != 0) {
            failed = true;
            throw new DistributedException(function + " (" + context + ") failed: " + lib.errorString(rc)
                    + " (MPI error code " + rc + ", " + lib.abi.family() + ")");
        }
        if (upcall != null) {
            failed = true;
            throw new DistributedException(function + " (" + context + "): the jdist reduction callback failed: " + upcall, upcall);
        }
    }

    /** Converts a Throwable thrown by {@code invokeExact} itself. */
    DistributedException wrap(String function, Throwable t) {
        failed = true;
        if (t instanceof DistributedException d) return d;
        return new DistributedException(function + " could not be called: " + t, t);
    }

    /** {@code MPI_Finalize}, once; later calls do nothing. */
    synchronized void finalizeMpi() {
        if (finalized) return;
        finalized = true;
        try {
            int rc;
            if (!multiple) lock.lock();
            try {
                freeOwnHandles();
                rc = (int) lib.finalize.invokeExact();
            } finally {
                if (!multiple) lock.unlock();
            }
            if (rc != 0) {
                throw new DistributedException("MPI_Finalize failed: " + lib.errorString(rc) + " (MPI error code " + rc + ")");
            }
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw new DistributedException("MPI_Finalize could not be called: " + t, t);
        }
    }

    /** Frees jdist's user ops and 2-byte types before {@code MPI_Finalize} (MPICH warns about leaked handles otherwise). */
    private void freeOwnHandles() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(8);
            synchronized (userOps) {
                for (long op : userOps.values()) {
                    abi.writeHandle(h, op);
                    int ignored = (int) lib.opFree.invokeExact(h);
                }
                userOps.clear();
            }
            for (long t : halfTypes.values()) {
                abi.writeHandle(h, t);
                int ignored = (int) lib.typeFree.invokeExact(h);
            }
            halfTypes.clear();
        } catch (Throwable t) {
            // freeing is a courtesy before MPI_Finalize; never let it stop finalization
        }
    }

    /**
     * At JVM exit, finalizes MPI when the program did not (so {@code mpirun} sees a clean exit), unless an
     * MPI call is still running or one failed: then finalizing could wait forever for peers.
     */
    private void finalizeAtExit() {
        if (finalized || failed || inFlight.get() != 0) return;
        try {
            finalizeMpi();
        } catch (RuntimeException e) {
            // nothing sensible is left to do at exit
        }
    }

    /** Calls a no-argument-beyond-handle MPI function for rank/size queries. */
    int queryInt(MethodHandle fn, long comm, String function) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            enter();
            try {
                check((int) fn.invokeExact(comm, out), function, "communicator query");
            } finally {
                exit();
            }
            return out.get(ValueLayout.JAVA_INT, 0);
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(function, t);
        }
    }

    /** {@code MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)}: errors come back as codes, not process aborts. */
    void errorsReturn(long comm) {
        enter();
        try {
            check((int) lib.commSetErrhandler.invokeExact(comm, abi.errorsReturn()), "MPI_Comm_set_errhandler", "MPI_ERRORS_RETURN");
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap("MPI_Comm_set_errhandler", t);
        } finally {
            exit();
        }
    }
}
