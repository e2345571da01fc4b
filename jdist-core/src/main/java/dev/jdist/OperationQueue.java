package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.liveness.LocalActivity;
import dev.jdist.liveness.OperationWatch;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Runs a group's operations one at a time in issue order (docs/reference/collectives.md §2.6), whichever
 * threads issue them and whether sync or async. It is also the one place every operation passes: it computes the
 * operation's {@link OperationFingerprint}, publishes it to the liveness watch ({@link LocalActivity}), lets the
 * group's {@link OperationWatch} check it before it runs and explain its failure, and fills the failure's facts.
 *
 * <p>Each operation takes a ticket when it is issued; it runs once every earlier ticket has
 * finished. A synchronous call runs on the caller's thread: with nothing queued it costs two
 * uncontended lock round trips and no thread hand-off. Asynchronous calls run on one platform
 * thread per group, in ticket order (platform, not virtual: backends block in native calls, which
 * would pin the few carrier threads and can deadlock ranks that share a JVM). Their futures are
 * completed from a separate callback pool, so a callback that issues another operation never
 * blocks the worker that must run the operations queued ahead of it. A failed operation still
 * finishes its ticket, so later ones run.
 *
 * <p>A ticket is the operation's sequence number in its group: every operation, sync or async, runs
 * through {@link #execute} with it, between {@link OperationEvent#beginOperation()}/{@link OperationTrace#started} and
 * {@link OperationTrace#end}/{@link OperationEvent#endOperation}.
 */
final class OperationQueue implements AutoCloseable, LocalActivity {

    private final String name;
    private final OperationTrace trace;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition turnChanged = lock.newCondition();
    private long issued;        // next ticket to hand out; guarded by lock
    private long completed;     // tickets finished; the ticket equal to this may run; guarded by lock
    private boolean closed;     // guarded by lock
    private long closedAt;      // the first ticket that must not run once closed; guarded by lock
    private volatile Thread running;   // thread of the running operation, to catch re-entrant calls
    private ExecutorService worker;    // created on the first async call; guarded by lock

    private static final ExecutorService CALLBACKS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "jdist-callbacks");
        t.setDaemon(true);
        return t;
    });

    private volatile long runningTicket = -1;   // the running operation's ticket, for currentSequence()
    private long collectives;                    // collectives run so far; touched only by the operation whose turn it is
    private int history;                         // the digest of those collectives (OperationFingerprint.history())
    /** The last {@value #RECENT} collectives, at their number mod RECENT: heartbeats carry them, so ranks compare more than a sample. */
    static final int RECENT = 8;
    private final java.util.concurrent.atomic.AtomicReferenceArray<OperationFingerprint> recent =
            new java.util.concurrent.atomic.AtomicReferenceArray<>(RECENT);
    private volatile OperationFingerprint current;
    private volatile OperationFingerprint lastCompleted;
    private volatile long changedAt = System.nanoTime();
    private volatile OperationWatch watch;

    /** @param name for messages and thread names; {@code trace} describes the group in trace events */
    OperationQueue(String name, OperationTrace trace) {
        this.name = name;
        this.trace = trace;
    }

    /**
     * Runs {@code op} on this thread after every earlier operation; its exception propagates. The
     * other arguments describe it for {@link OperationTrace}: {@code dtype} and {@code shape} null for split,
     * {@code peer} -1 for collectives.
     */
    <T> T run(OperationTrace.Kind kind, DType dtype, int[] shape, long bytes, int peer, Supplier<T> op) {
        if (running == Thread.currentThread()) {
            throw new IllegalStateException("an operation on group " + name + " was issued from inside another "
                    + "operation of the same group; it would wait for itself. Issue it after the first one returns.");
        }
        long ticket = take();
        awaitTurn(ticket);
        return execute(ticket, kind, dtype, shape, bytes, peer, false, op);
    }

    /** The running operation's sequence number (its ticket); only meaningful inside that operation. */
    long currentSequence() { return runningTicket; }

    /** Issues {@code op} now (its place in the order is fixed here) and runs it when its turn comes. */
    <T> CompletableFuture<T> submit(OperationTrace.Kind kind, DType dtype, int[] shape, long bytes, int peer, Supplier<T> op) {
        CompletableFuture<T> result = new CompletableFuture<>();
        lock.lock();
        try {
            long ticket = take();
            if (worker == null) {
                worker = Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, "jdist-ops-" + name);
                    t.setDaemon(true);
                    return t;
                });
            }
            // Enqueued under the lock: the worker's FIFO order must equal ticket order.
            worker.execute(() -> {
                awaitTurn(ticket);
                try {
                    T value = execute(ticket, kind, dtype, shape, bytes, peer, true, op);
                    CALLBACKS.execute(() -> result.complete(value));
                } catch (Throwable t) {
                    CALLBACKS.execute(() -> result.completeExceptionally(t));
                }
            });
        } finally {
            lock.unlock();
        }
        return result;
    }

    private long take() {
        lock.lock();
        try {
            if (closed) throw new IllegalStateException("group " + name + " is closed; call Distributed.init() for a new one");
            return issued++;
        } finally {
            lock.unlock();
        }
    }

    private void awaitTurn(long ticket) {
        lock.lock();
        try {
            boolean interrupted = false;
            while (completed != ticket) {
                // Leaving the line would stall every later ticket, so interrupts are kept for later.
                try {
                    turnChanged.await();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** Runs the operation whose turn it is and finishes its ticket before any result is published. */
    private <T> T execute(long ticket, OperationTrace.Kind kind, DType dtype, int[] shape, long bytes, int peer, boolean async,
                          Supplier<T> op) {
        running = Thread.currentThread();
        runningTicket = ticket;
        OperationFingerprint fingerprint = fingerprint(ticket, kind, dtype, shape, bytes, peer);
        current = fingerprint;
        changedAt = System.nanoTime();
        OperationEvent event = OperationEvent.beginOperation();
        trace.started(ticket, kind, dtype, shape, bytes, peer, async);
        Throwable failure = null;
        OperationWatch w = watch;
        try {
            if (closedBefore(ticket)) {
                // issued before close() but not started: the backend is being released, so it must not run
                throw new IllegalStateException("group " + name + " was closed before this " + kind.mlxName()
                        + " (operation #" + ticket + ") started; wait for your operations before closing the group");
            }
            if (w != null) w.before(fingerprint);
            return op.get();
        } catch (DistributedException e) {
            DistributedException reported = w == null ? e : w.failed(e, fingerprint);
            if (w != null && reported instanceof PeerLostException p && p.peer().isPresent()) {
                String where = w.peerHost(p.peer().getAsInt());
                if (where != null) p.describeHost(where);
            }
            reported.fillIn(trace.rank(), trace.group(), ticket, fingerprint.call());
            failure = reported;
            throw reported;
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            try {
                trace.end(ticket, failure);
                OperationEvent.endOperation(event, trace, ticket, kind, dtype, bytes, peer, async, failure);
            } finally {
                lastCompleted = fingerprint;
                current = null;
                changedAt = System.nanoTime();
                runningTicket = -1;
                running = null;
                lock.lock();
                try {
                    completed++;
                    turnChanged.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    private boolean closedBefore(long ticket) {
        lock.lock();
        try {
            return closed && ticket >= closedAt;
        } finally {
            lock.unlock();
        }
    }

    /** The operation's fingerprint; its collective number counts in turn order, so it is the same on every rank. */
    private OperationFingerprint fingerprint(long ticket, OperationTrace.Kind kind, DType dtype, int[] shape, long bytes, int peer) {
        if (shape == null && dtype != null) shape = new int[] {(int) Math.min(Integer.MAX_VALUE, bytes / dtype.itemSize())};
        boolean collective = kind.collective();
        OperationFingerprint f = new OperationFingerprint(ticket, collectives, kind, dtype, shape, peer, history);
        if (collective) {
            recent.lazySet((int) (collectives % RECENT), f);
            collectives++;
            history = f.history();
        }
        return f;
    }

    /** Sets the group's watch (once, before the first user operation). */
    void watch(OperationWatch w) { this.watch = w; }

    @Override
    public OperationFingerprint running() { return current; }

    @Override
    public OperationFingerprint lastCompleted() { return lastCompleted; }

    @Override
    public long changedAtNanos() { return changedAt; }

    @Override
    public java.util.List<OperationFingerprint> recentCollectives() {
        java.util.List<OperationFingerprint> out = new java.util.ArrayList<>(RECENT);
        for (int i = 0; i < RECENT; i++) {
            OperationFingerprint f = recent.get(i);
            if (f != null) out.add(f);
        }
        return out;
    }

    /**
     * Stops taking work: operations issued after this fail at once; those issued earlier but not started fail when their
     * turn comes (their futures complete exceptionally) and never reach the backend; the running one goes on. Returns at
     * once: the owner then ends the running operation through its backend (closing it aborts what waits) and calls
     * {@link #awaitFinished()} before anything else is released.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (!closed) {
                closed = true;
                closedAt = completed + (runningTicket >= 0 ? 1 : 0);
                if (worker != null) worker.shutdown();   // issued async operations still take their turn, and fail
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * After {@link #close()}: returns once every issued operation has finished, so nothing of this group runs
     * afterwards. Each is bounded by its backend's deadline, the ones that never started end at once. Called from
     * inside an operation of this group (a callback), it does not wait for itself.
     */
    void awaitFinished() {
        lock.lock();
        try {
            if (running == Thread.currentThread()) return;
            boolean interrupted = false;
            while (completed != issued) {
                try {
                    turnChanged.await();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }
}
