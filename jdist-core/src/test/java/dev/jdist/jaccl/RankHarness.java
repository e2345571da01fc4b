package dev.jdist.jaccl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/** Runs one JACCL group's ranks as threads over a {@link MemFabric}. */
final class RankHarness implements AutoCloseable {
    final int n;
    final int wires; // 0 = mesh
    final MemFabric fabric;
    final FrameEngine[] engines;
    final JacclCollectives[] collectives;
    private final ExecutorService pool;

    RankHarness(int n, int wires, JacclConfig.QpMode mode, Duration timeout) {
        this.n = n;
        this.wires = wires;
        this.fabric = wires == 0 ? MemFabric.mesh(n, mode) : MemFabric.ring(n, wires, mode);
        this.engines = new FrameEngine[n];
        this.collectives = new JacclCollectives[n];
        for (int r = 0; r < n; r++) {
            engines[r] = new FrameEngine(fabric.transport(r), r, timeout);
            collectives[r] = wires == 0 ? new MeshCollectives(engines[r], n) : new RingCollectives(engines[r], n, wires);
        }
        this.pool = Executors.newFixedThreadPool(n, r -> {
            Thread t = new Thread(r, "jaccl-rank");
            t.setDaemon(true);
            return t;
        });
    }

    interface RankTask<T> {
        T run(int rank, JacclCollectives c) throws Exception;
    }

    /** Runs {@code task} on the given ranks at once; returns each rank's result or throwable (index = rank). */
    <T> List<Object> runAll(IntFunction<Boolean> participates, RankTask<T> task, long limitSeconds) throws InterruptedException {
        List<Future<T>> futures = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int rank = r;
            futures.add(participates.apply(r) ? pool.submit(() -> task.run(rank, collectives[rank])) : null);
        }
        List<Object> out = new ArrayList<>();
        for (Future<T> f : futures) {
            if (f == null) {
                out.add(null);
                continue;
            }
            try {
                out.add(f.get(limitSeconds, TimeUnit.SECONDS));
            } catch (ExecutionException e) {
                out.add(e.getCause());
            } catch (java.util.concurrent.TimeoutException e) {
                f.cancel(true);
                out.add(e);
            }
        }
        return out;
    }

    <T> List<T> runAllOk(RankTask<T> task) throws Exception {
        List<Object> res = runAll(r -> true, task, 120);
        List<T> out = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            Object o = res.get(r);
            if (o instanceof Throwable t) throw new AssertionError("rank " + r + " failed: " + t, t);
            @SuppressWarnings("unchecked") T v = (T) o;
            out.add(v);
        }
        return out;
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}
