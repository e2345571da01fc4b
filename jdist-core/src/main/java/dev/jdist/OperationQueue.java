package dev.jdist;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Runs a group's operations one at a time in issue order (spec collectives.md §2.6), whichever
 * threads issue them and whether sync or async.
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
 * through {@link #execute} with it, between {@link OperationTrace#begin()}/{@link OperationTrace#started} and
 * {@link OperationTrace#end}.
 */
final class OperationQueue implements AutoCloseable {
    private final String name;
    private final OperationTrace trace;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition turnChanged = lock.newCondition();
    private long issued;        // next ticket to hand out; guarded by lock
    private long completed;     // tickets finished; the ticket equal to this may run; guarded by lock
    private boolean closed;     // guarded by lock
    private volatile Thread running;   // thread of the running operation, to catch re-entrant calls
    private ExecutorService worker;    // created on the first async call; guarded by lock

    private static final ExecutorService CALLBACKS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "jdist-callbacks");
        t.setDaemon(true);
        return t;
    });

    private volatile long runningTicket = -1;   // the running operation's ticket, for currentSequence()

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
        OperationEvent event = OperationTrace.begin();
        trace.started(ticket, kind, dtype, shape, bytes, peer, async);
        Throwable failure = null;
        try {
            return op.get();
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            try {
                trace.end(event, ticket, kind, dtype, bytes, peer, async, failure);
            } finally {
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

    /** Operations issued after this fail; those already issued still run in order. */
    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            if (worker != null) worker.shutdown();   // operations already issued still run
        } finally {
            lock.unlock();
        }
    }
}
