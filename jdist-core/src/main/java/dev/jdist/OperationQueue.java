package dev.jdist;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Runs a group's operations one at a time in issue order. Synchronous calls run on the caller's
 * thread (no hand-off latency) once every earlier operation has finished; async calls run on one
 * daemon thread per group.
 */
final class OperationQueue implements AutoCloseable {
    private final ReentrantLock lock = new ReentrantLock(true);
    private final String name;
    private ExecutorService executor;
    private CompletableFuture<?> tail = CompletableFuture.completedFuture(null);

    OperationQueue(String name) {
        this.name = name;
    }

    <T> T run(Supplier<T> op) {
        CompletableFuture<?> before;
        synchronized (this) {
            before = tail;
        }
        before.exceptionally(e -> null).join();
        lock.lock();
        try {
            return op.get();
        } finally {
            lock.unlock();
        }
    }

    synchronized <T> CompletableFuture<T> submit(Supplier<T> op) {
        if (executor == null) {
            executor = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "jdist-ops-" + name);
                t.setDaemon(true);
                return t;
            });
        }
        CompletableFuture<T> f = tail.exceptionally(e -> null).thenApplyAsync(x -> {
            lock.lock();
            try {
                return op.get();
            } finally {
                lock.unlock();
            }
        }, executor);
        tail = f;
        return f;
    }

    @Override
    public synchronized void close() {
        if (executor != null) executor.shutdownNow();
    }
}
