package dev.jdist;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Runs a group's operations one at a time in issue order (spec collectives.md §2.6), whichever
 * threads issue them and whether sync or async.
 *
 * <p>Each operation takes a ticket when it is issued; it runs once every earlier ticket has
 * finished. A synchronous call runs on the caller's thread: with nothing queued it costs two
 * uncontended lock round trips and no thread hand-off. An asynchronous call runs on its own
 * virtual thread, so a caller's callback that issues another operation can never block the
 * operations queued ahead of it. A failed operation still finishes its ticket, so later ones run.
 */
final class OperationQueue implements AutoCloseable {
    private final String name;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition turnChanged = lock.newCondition();
    private long issued;        // next ticket to hand out; guarded by lock
    private long completed;     // tickets finished; the ticket equal to this may run; guarded by lock
    private boolean closed;     // guarded by lock
    private volatile Thread running;   // thread of the running operation, to catch re-entrant calls

    OperationQueue(String name) {
        this.name = name;
    }

    /** Runs {@code op} on this thread after every earlier operation; its exception propagates. */
    <T> T run(Supplier<T> op) {
        if (running == Thread.currentThread()) {
            throw new IllegalStateException("an operation on group " + name + " was issued from inside another "
                    + "operation of the same group; it would wait for itself. Issue it after the first one returns.");
        }
        long ticket = take();
        awaitTurn(ticket);
        return execute(op);
    }

    /** Issues {@code op} now (its place in the order is fixed here) and runs it when its turn comes. */
    <T> CompletableFuture<T> submit(Supplier<T> op) {
        long ticket = take();
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread.ofVirtual().name("jdist-op-" + name + "-" + ticket).start(() -> {
            awaitTurn(ticket);
            T value;
            try {
                value = execute(op);
            } catch (Throwable t) {
                result.completeExceptionally(t);
                return;
            }
            result.complete(value);
        });
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
    private <T> T execute(Supplier<T> op) {
        running = Thread.currentThread();
        try {
            return op.get();
        } finally {
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

    /** Operations issued after this fail; those already issued still run in order. */
    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
        } finally {
            lock.unlock();
        }
    }
}
