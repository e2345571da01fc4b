package dev.jdist.mpi;

import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.ReduceOp;
import dev.jdist.flight.FlightRecorder;
import dev.jdist.spi.Liveness;
import dev.jdist.spi.NativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Process-wide MPI state (docs/reference/collectives.md §5.2): the one library, {@code MPI_Init_thread} at most
 * once, the float16/bfloat16 types and user ops created once, {@code MPI_Finalize} once. Every MPI call
 * goes through here: when the library grants less than {@code MPI_THREAD_MULTIPLE}, calls are
 * serialised with one process-wide lock.
 *
 * <p>No hang: every operation is a nonblocking MPI call whose request {@link #await} polls with
 * {@code MPI_Test} until it completes or the deadline ({@code JDIST_TIMEOUT}, read once when MPI starts)
 * passes. MPI cannot continue past a collective that failed on one rank, so such a failure ends the whole
 * job ({@link #abortJob}: the typed error on stderr, then {@code MPI_Abort}).
 */
final class MpiRuntime {
    private static final System.Logger LOG = System.getLogger("dev.jdist.mpi");
    private static final Map<String, MpiLibrary> LOADED = new HashMap<>();
    /** Pause between printing the error and MPI_Abort, so that the launcher forwards the message. */
    static final long ABORT_GRACE_MILLIS = 500;
    /** Busy polling of a request before sleeping: this long, plus {@link #BUSY_NANOS_PER_BYTE} per byte moved. */
    static final long BUSY_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /**
     * MPI makes progress only inside MPI calls: a long transfer whose receiver sleeps would crawl. So a request
     * is polled without pause for as long as its bytes take at 0.5 GB/s (2 ns per byte), up to 1 s.
     */
    static final long BUSY_NANOS_PER_BYTE = 2;
    static final long MAX_BUSY_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** Then sleeps between polls, from 20 µs doubling up to 200 µs: a waiting rank costs a few % of a core. */
    static final long FIRST_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    static final long MAX_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    private static MpiRuntime initialised;        // the runtime whose MPI_Init_thread succeeded
    private static String initFailure;             // MPI_Init_thread's error, never retried

    final MpiLibrary lib;
    final MpiAbi abi;
    private final boolean multiple;
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<DType, Long> halfTypes = new EnumMap<>(DType.class);
    private final Map<String, Long> userOps = new HashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    /** Operations started and not yet complete (a request MPI still holds). */
    private final AtomicInteger pending = new AtomicInteger();
    /** {@code JDIST_TIMEOUT}, or the liveness watch's progress deadline once it runs. */
    private volatile Duration deadline;
    private volatile long deadlineNanos;
    /** The job's liveness watch (every rank is jdist: a job token), or null; its verdict ends the job like the deadline. */
    private volatile Liveness liveness;
    private volatile boolean failed;
    private volatile boolean finalized;
    private int provided;
    private final MemorySegment inPlaceMarker;

    private MpiRuntime(MpiLibrary lib, boolean multiple, Duration deadline) {
        this.lib = lib;
        this.abi = lib.abi;
        this.multiple = multiple;
        this.inPlaceMarker = MemorySegment.ofAddress(lib.abi.inPlace());
        this.deadline = deadline;
        this.deadlineNanos = deadline.toNanos();
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

    /**
     * {@code MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided)}, at most once per process.
     *
     * @param deadline how long any operation may take to complete ({@code JDIST_TIMEOUT}); the first
     *                 initialisation's value holds for the life of the process
     */
    static synchronized MpiRuntime initialise(MpiLibrary lib, Duration deadline) {
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
            MpiRuntime rt = new MpiRuntime(lib, !already && provided >= lib.abi.threadMultiple(), deadline);
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

    /** The deadline of every operation ({@code JDIST_TIMEOUT}, or the liveness watch's progress deadline). */
    Duration deadline() { return deadline; }

    /**
     * Every rank is jdist and the job's liveness watch runs (docs/reliability.md): a wait ends the job as soon as the watch
     * reports a lost or stopped rank or a failure elsewhere, and a slow rank is waited for up to the watch's progress
     * deadline. One watch per job: MPI's groups share this runtime.
     */
    void useLiveness(Liveness watch) {
        this.deadline = watch.progressDeadline();
        this.deadlineNanos = deadline.toNanos();
        this.liveness = watch;
    }

    /** {@code MPI_IN_PLACE} as a segment. */
    MemorySegment inPlace() { return inPlaceMarker; }

    int providedThreadLevel() { return provided; }

    boolean finalized() { return finalized; }

    /** Whether an MPI call failed (then MPI_Finalize is not attempted at exit). */
    boolean failed() { return failed; }

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

    /**
     * {@code MPI_Finalize}, once; later calls do nothing. It waits for every rank, so a barrier polled against
     * the deadline comes first (a stopped rank ends the job instead of hanging it).
     */
    synchronized void finalizeMpi() {
        if (finalized) return;
        if (!failed) {
            awaitOwnOperations();
            awaitEveryRank();
        }
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

    /**
     * Closing the world while another thread of this process still runs an operation (an async one issued just
     * before close) would finalize MPI under it: wait for those first, within the deadline. Operations issued
     * later fail with "MPI was finalized".
     */
    private void awaitOwnOperations() {
        long end = System.nanoTime() + deadlineNanos;
        while ((pending.get() != 0 || inFlight.get() != 0) && System.nanoTime() - end < 0) {
            LockSupport.parkNanos(MAX_SLEEP_NANOS);
        }
        if (pending.get() != 0 || inFlight.get() != 0) {
            LOG.log(System.Logger.Level.WARNING, "closing the MPI world while an operation of this process has not completed "
                    + "after " + seconds(deadline) + "; finalizing anyway");
        }
    }

    /** {@code MPI_Ibarrier} on the world, polled; the deadline ends the job. */
    private void awaitEveryRank() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment request = arena.allocate(8, 8);
            MemorySegment flag = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment status = arena.allocate(abi.statusSize(), 8);
            int rank = queryInt(lib.commRank, abi.commWorld(), "MPI_Comm_rank");
            int size = queryInt(lib.commSize, abi.commWorld(), "MPI_Comm_size");
            String op = "close (MPI_Ibarrier before MPI_Finalize)";
            started();
            try {
                int rc;
                enter();
                try {
                    rc = (int) lib.ibarrier.invokeExact(abi.commWorld(), request);
                } finally {
                    exit();
                }
                if (rc == 0) {
                    rc = await(request, flag, status, 0, waited -> new dev.jdist.DeadlineExceededException("mpi rank " + rank
                            + " of " + size + ": " + op + " did not complete within " + seconds(deadline) + " (JDIST_TIMEOUT; waited "
                            + seconds(Duration.ofNanos(waited)) + "): not every rank reached the end of the job (one is stopped, dead or still "
                            + "working); jdist ends the job rather than wait in MPI_Finalize forever", null, rank, "close", deadline));
                }
                if (rc != 0) {
                    throw abortJob(new DistributedException("MPI_Ibarrier before MPI_Finalize failed on rank " + rank + ": "
                            + lib.errorString(rc) + " (MPI error code " + rc + ")", null, rank, "close"));
                }
            } finally {
                finished();
            }
        } catch (DistributedException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap("MPI_Ibarrier", t);
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
     * MPI call or operation is still running or one failed: then finalizing could wait forever for peers.
     */
    private void finalizeAtExit() {
        if (finalized || failed || inFlight.get() != 0 || pending.get() != 0) return;
        try {
            finalizeMpi();
        } catch (RuntimeException e) {
            // nothing sensible is left to do at exit
        }
    }

    // ---------------------------------------------------------------- waiting, and ending the job

    /** Counts an operation whose request MPI holds from its start until {@link #finished()}. */
    void started() { pending.incrementAndGet(); }

    void finished() { pending.decrementAndGet(); }

    /**
     * Polls the request in {@code request} with {@code MPI_Test} until it completes: busily at first (see
     * {@link #BUSY_NANOS}), then with short sleeps. Returns 0, or the MPI error code the request completed
     * with. When the deadline passes first, the job ends ({@link #abortJob}) with the exception
     * {@code onDeadline} makes from the time waited: nothing is returned while MPI may still use the buffers.
     *
     * @param bytes the bytes the operation moves, which sets how long it is polled without pause
     */
    int await(MemorySegment request, MemorySegment flag, MemorySegment status, long bytes,
              java.util.function.LongFunction<DistributedException> onDeadline) {
        long start = System.nanoTime();
        long busyUntil = start + Math.min(MAX_BUSY_NANOS, BUSY_NANOS + BUSY_NANOS_PER_BYTE * Math.max(0, bytes));
        long sleep = FIRST_SLEEP_NANOS;
        while (true) {
            int rc;
            enter();
            try {
                rc = (int) lib.test.invokeExact(request, flag, status);
            } catch (Throwable t) {
                throw wrap("MPI_Test", t);
            } finally {
                exit();
            }
            if (rc != 0 || flag.get(ValueLayout.JAVA_INT, 0) != 0) return rc;
            long now = System.nanoTime();
            if (now - busyUntil < 0) {
                Thread.onSpinWait();
                continue;
            }
            Liveness watch = liveness;
            DistributedException lost = watch == null ? null : watch.failure();
            if (lost != null) abortJob(lost);   // a rank known to be gone or stopped: no need to wait for the deadline
            if (now - start >= deadlineNanos) abortJob(onDeadline.apply(now - start));
            LockSupport.parkNanos(sleep);
            sleep = Math.min(2 * sleep, MAX_SLEEP_NANOS);
        }
    }

    /**
     * Ends the job: MPI cannot continue once a collective failed or stalled on one rank (the others would wait
     * in it, or match its messages against later operations). Prints the typed error (class, message, and
     * where the program was) to stderr, writes the flight record, then calls {@code MPI_Abort(MPI_COMM_WORLD, 70)},
     * which stops every process of the job. If {@code MPI_Abort} has not ended this process after
     * {@link MpiBackend#ABORT_BOUND_MILLIS}, the process ends itself; if a library's {@code MPI_Abort} returned, the
     * error is thrown to the caller.
     */
    DistributedException abortJob(DistributedException error) {
        failed = true;
        System.err.println(MpiBackend.ABORT_NOTICE + " (exit status " + MpiBackend.ABORT_EXIT_CODE + ") because of:");
        error.printStackTrace(System.err);
        System.err.flush();
        // MPI_Abort ends this process before the error reaches the operation's record: write the flight record now
        FlightRecorder.dump("MPI_Abort: " + error);
        // The launcher forwards our stderr through a pipe and stops forwarding when the abort kills the job:
        // give it a moment to pass the message on (the job is over anyway).
        try {
            Thread.sleep(ABORT_GRACE_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Thread bound = Thread.ofPlatform().daemon().name("jdist-mpi-abort-bound").start(MpiRuntime::endIfAbortHangs);
        // Not enter(): another thread may hold the lock inside a call that never returns.
        boolean locked = multiple || lockQuietly();
        try {
            int ignored = (int) lib.abort.invokeExact(abi.commWorld(), MpiBackend.ABORT_EXIT_CODE);
        } catch (Throwable t) {
            error.addSuppressed(t);
        } finally {
            if (locked && !multiple) lock.unlock();
            bound.interrupt();   // MPI_Abort returned: the caller gets the error instead
        }
        throw error;
    }

    /** The bound on {@code MPI_Abort} ({@link MpiBackend#ABORT_BOUND_MILLIS}): past it, this process ends, saying why. */
    private static void endIfAbortHangs() {
        try {
            Thread.sleep(MpiBackend.ABORT_BOUND_MILLIS);
        } catch (InterruptedException returned) {
            return;
        }
        System.err.println("jdist: MPI_Abort did not end this process within " + MpiBackend.ABORT_BOUND_MILLIS / 1000 + " s: mpirun "
                + "or its daemon on this host cannot be reached (a network partition, or the launcher is gone). Ending the "
                + "process with exit status " + MpiBackend.ABORT_EXIT_CODE + "; mpirun learns of it only if its host becomes reachable again.");
        System.err.flush();
        Runtime.getRuntime().halt(MpiBackend.ABORT_EXIT_CODE);
    }

    /** {@code "5 s"}, {@code "2.500 s"}: durations in messages. */
    static String seconds(Duration d) {
        return dev.jdist.spi.JdistTimeout.secondsWithUnit(d);
    }

    private boolean lockQuietly() {
        try {
            return lock.tryLock(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
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
