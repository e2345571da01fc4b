package dev.jdist.nccl;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

/** Free loopback ports, per-rank environments and "run this on every rank, one thread each". */
final class NcclTestSupport {

    private NcclTestSupport() {}

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The four §6.1 variables for {@code rank} of {@code n} on 127.0.0.1:{@code port}, plus {@code extra}. */
    static Map<String, String> rankEnv(int rank, int n, int port, long timeoutMs, Map<String, String> extra) {
        Map<String, String> env = new HashMap<>(extra);
        env.put("NCCL_HOST_IP", "127.0.0.1");
        env.put("NCCL_PORT", Integer.toString(port));
        env.put("MLX_RANK", Integer.toString(rank));
        env.put("MLX_WORLD_SIZE", Integer.toString(n));
        env.put("MLX_NCCL_TIMEOUT", Long.toString(timeoutMs));
        return env;
    }

    /** Runs {@code body(rank)} for every rank on its own thread; rethrows the first failure. */
    static <T> List<T> onRanks(int n, IntFunction<T> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                futures.add(pool.submit(() -> body.apply(rank)));
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : futures) {
                try {
                    out.add(f.get(60, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) throw ex;
                    throw e;
                } catch (TimeoutException e) {
                    throw new AssertionError("a rank did not finish within 60 s", e);
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
