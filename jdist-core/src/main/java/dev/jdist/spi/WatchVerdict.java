package dev.jdist.spi;

import dev.jdist.DistributedException;

import java.util.function.Consumer;

/**
 * What a transport that sleeps while it waits (the ring's selector, the peer mesh) keeps of the job's liveness watch:
 * whether the watch ended it from its own thread, and which error a waiting operation then throws. The watch's error
 * says where a failure began; the transport's own (a closed connection) is only its consequence, kept as suppressed.
 */
public final class WatchVerdict {
    private volatile Liveness liveness;
    private volatile DistributedException verdict;

    /**
     * Starts listening to {@code watch}: its first failure is recorded and handed to {@code end}, on the watch's thread,
     * which must only close and wake things (the transport's connections, its selector) and return.
     */
    public void listen(Liveness watch, Consumer<DistributedException> end) {
        this.liveness = watch;
        watch.onFailure(cause -> {
            if (verdict != null) return;
            verdict = cause;
            end.accept(cause);
        });
    }

    /**
     * The transport's own failure, before it closes its connections: the watch tells the peers why first (unless the
     * watch itself ended the transport, whose reason they have).
     */
    public void failing(DistributedException e) {
        Liveness l = liveness;
        if (l != null && verdict == null) l.failing(e);
    }

    /** Whether the watch has ended the transport. */
    public boolean reached() { return verdict != null; }

    /** Throws the watch's error when it ended the transport; call it where a waiting operation would otherwise sleep. */
    public void check() {
        DistributedException v = verdict;
        if (v != null) throw current(v);
    }

    /** The error to throw for {@code e}, seen by an operation: the watch's when it ended the transport, else {@code e}. */
    public DistributedException explain(DistributedException e) {
        DistributedException w = cause(e);
        return w != null ? w : e;
    }

    /**
     * When the watch ended the transport: its error, with {@code e} suppressed ({@code e} is what the closing caused in
     * the waiting thread, say a cancelled selection key); else null.
     */
    public DistributedException cause(Throwable e) {
        DistributedException v = verdict;
        if (v == null) return null;
        DistributedException w = current(v);
        if (w != e) w.addSuppressed(e);
        return w;
    }

    /** The watch's newest account of the failure (it may have learnt where it began since), else the first verdict. */
    private DistributedException current(DistributedException first) {
        Liveness l = liveness;
        DistributedException f = l == null ? null : l.failure();
        return f != null ? f : first;
    }
}
