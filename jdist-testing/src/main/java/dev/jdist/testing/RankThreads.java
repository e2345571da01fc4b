package dev.jdist.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Ranks as threads of the test's own JVM: one thread per rank, all at once, each bounded in time. */
public final class RankThreads {
    private RankThreads() {}

    /** What one rank does; {@code rank} is 0..n-1. */
    @FunctionalInterface
    public interface RankBody<T> {
        T run(int rank) throws Exception;
    }

    /**
     * Runs {@code body} for ranks 0..n-1 at once and returns their results in rank order. The first failure in rank
     * order is rethrown as it was thrown; a rank still running after {@code seconds} is an {@link AssertionError};
     * every thread is interrupted before this returns.
     */
    public static <T> List<T> run(int n, long seconds, RankBody<T> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                futures.add(pool.submit(() -> body.run(rank)));
            }
            List<T> out = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                try {
                    out.add(futures.get(r).get(seconds, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) throw ex;
                    if (e.getCause() instanceof Error err) throw err;
                    throw e;
                } catch (TimeoutException e) {
                    throw new AssertionError("rank " + r + " did not finish within " + seconds + " s", e);
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
