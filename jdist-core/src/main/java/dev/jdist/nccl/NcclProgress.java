package dev.jdist.nccl;

import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * How the nccl backend waits without hanging: NCCL and the GPU make progress on their own, so the host
 * thread only polls ({@code ncclCommGetAsyncError}, {@code cudaStreamQuery}) — busily for the first
 * millisecond (small collectives finish in microseconds), then with sleeps of up to half a millisecond —
 * until the work is done or the deadline ({@code JDIST_TIMEOUT}) passes. And how it gives up:
 * {@code ncclCommAbort} on a helper thread, waited for a bounded time, so that teardown cannot hang either.
 */
final class NcclProgress {
    static final long BUSY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    static final long FIRST_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    static final long MAX_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(500);
    /** How long {@link #abort} waits for {@code ncclCommAbort} before leaving it to finish in the background. */
    static final Duration ABORT_WAIT = Duration.ofSeconds(10);

    private static final System.Logger LOG = System.getLogger("dev.jdist.nccl");

    private NcclProgress() {}

    /** Calls {@code done} until it answers true (then true) or {@code deadline} has passed (then false); its exceptions propagate. */
    static boolean await(Duration deadline, BooleanSupplier done) {
        long start = System.nanoTime();
        long limit = deadline.toNanos();
        long sleep = FIRST_SLEEP_NANOS;
        while (true) {
            if (done.getAsBoolean()) return true;
            long waited = System.nanoTime() - start;
            if (waited < BUSY_NANOS) {
                Thread.onSpinWait();
                continue;
            }
            if (waited >= limit) return false;
            LockSupport.parkNanos(Math.min(sleep, limit - waited));
            sleep = Math.min(2 * sleep, MAX_SLEEP_NANOS);
        }
    }

    /**
     * {@code ncclCommAbort(comm)}: ends the communicator and whatever it still runs on the GPU. Runs on a
     * daemon thread and is waited for at most {@link #ABORT_WAIT}, so a library stuck in it cannot hold the
     * caller; failures are logged (the caller is already reporting the failure that led here).
     */
    static void abort(NcclApi nccl, MemorySegment comm, String who) {
        if (comm == null || comm.equals(MemorySegment.NULL)) return;
        Thread t = Thread.ofPlatform().daemon().name("jdist-nccl-abort").unstarted(() -> {
            try {
                nccl.commAbort(comm);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, who + ": ncclCommAbort failed: " + e.getMessage());
            }
        });
        t.start();
        try {
            if (!t.join(ABORT_WAIT)) {
                LOG.log(System.Logger.Level.WARNING, who + ": ncclCommAbort has not returned after " + seconds(ABORT_WAIT)
                        + "; leaving it to finish in the background");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The typed error for a communicator NCCL reports broken ({@code ncclCommGetAsyncError} != success):
     * {@link PeerLostException} for {@code ncclRemoteError} ("remote process exited or there was a network
     * error") and {@code ncclSystemError} (a socket to a peer failed), otherwise a DistributedException.
     */
    static DistributedException asyncFailure(NcclApi nccl, MemorySegment comm, int code, int rank, String op, String who) {
        String detail = nccl.lastError(comm).map(s -> "; NCCL says: " + s).orElse("");
        String text = who + ": " + op + " failed: NCCL reports " + nccl.errorString(code) + " (ncclResult " + code + ", "
                + nccl.libraryName() + ")" + detail;
        if (code == NcclApi.REMOTE_ERROR || code == NcclApi.SYSTEM_ERROR) {
            return new PeerLostException(text + ". A peer process exited or its connection failed; jdist aborted the "
                    + "communicator (ncclCommAbort). Form a new group to continue", null, rank, -1, op);
        }
        return new DistributedException(text + "; jdist aborted the communicator (ncclCommAbort). Set NCCL_DEBUG=WARN "
                + "for NCCL's own log", null, rank, op);
    }

    /** {@code "5 s"}, {@code "2.500 s"}. */
    static String seconds(Duration d) {
        return dev.jdist.spi.JdistTimeout.secondsWithUnit(d);
    }
}
