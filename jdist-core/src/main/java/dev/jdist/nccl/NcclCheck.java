package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A self-check of the nccl backend on this machine: {@code java -cp jdist.jar dev.jdist.nccl.NcclCheck}.
 *
 * <p>Prints which libraries were loaded, the NCCL version and device count, then forms a 1-rank
 * communicator (unless the four docs/reference/collectives.md §6.1 variables are set, in which case it joins that world) and runs
 * every op — all_sum, all_max, all_min, all_gather, sum_scatter — for every dtype NCCL supports on
 * device memory ({@link DeviceArray}), the same through host staging, a split, and the
 * unsupported-dtype check. One line per check; exit status 0 when all pass, 1 when one fails, 2 when
 * the backend is unavailable.
 *
 * <p>Then the no-hang paths (issue 15): when it ran as a 1-rank world, a 2-rank communicator whose second
 * rank takes the unique id but never joins must end in {@code ncclCommAbort} and a
 * {@code DeadlineExceededException} after the deadline ({@code JDIST_GPU_CHECK_ABORT_TIMEOUT}, default
 * 5s), and the GPU must still work afterwards. With the argument {@code peer-stop} in a world of 2 or
 * more ranks (one GPU each), rank 1 stops itself (SIGSTOP) after a first all_sum and rank 0's next
 * all_sum must end the same way within {@code JDIST_TIMEOUT}, its close() within seconds; whoever
 * started the ranks kills the stopped one afterwards.
 */
public final class NcclCheck {

    private static final DType[] SUPPORTED = {DType.INT8, DType.UINT8, DType.INT32, DType.UINT32, DType.INT64,
        DType.UINT64, DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16};

    private int failures;

    private NcclCheck() {}

    public static void main(String[] args) throws IOException {
        boolean peerStop = args.length > 0 && args[0].equals("peer-stop");
        System.exit(new NcclCheck().run(System.getenv(), peerStop));
    }

    int run(Map<String, String> processEnv) throws IOException {
        return run(processEnv, false);
    }

    int run(Map<String, String> processEnv, boolean peerStop) throws IOException {
        NcclBackend backend = new NcclBackend(processEnv);
        if (!backend.isAvailable()) {
            System.out.println("nccl: UNAVAILABLE: " + backend.unavailableReason().orElse("?"));
            return 2;
        }
        NcclNatives n = NcclNatives.load(processEnv);
        System.out.println("nccl: libcudart = " + n.cuda().libraryName());
        System.out.println("nccl: libnccl   = " + n.nccl().libraryName() + ", version "
                + n.nccl().version().map(String::valueOf).orElse("unknown"));
        System.out.println("nccl: CUDA devices visible = " + n.cuda().deviceCount()
                + " (CUDA_VISIBLE_DEVICES=" + processEnv.getOrDefault("CUDA_VISIBLE_DEVICES", "unset") + ")");
        Map<String, String> env = new HashMap<>(processEnv);
        boolean alone = NcclConfig.fromEnv(processEnv, false).isEmpty();
        if (alone) {
            env.put("NCCL_HOST_IP", "127.0.0.1");
            env.put("NCCL_PORT", Integer.toString(freePort()));
            env.put("MLX_RANK", "0");
            env.put("MLX_WORLD_SIZE", "1");
        }
        try (NcclGroup g = (NcclGroup) backend.init(true, env).orElseThrow()) {
            System.out.println("nccl: communicator rank " + g.rank() + " of " + g.size() + " on cuda:" + g.device());
            int size = g.size();
            int rank = g.rank();
            for (DType dt : SUPPORTED) {
                deviceOps(g, dt, rank, size);
                hostOps(g, dt, rank, size);
            }
            try (NcclGroup child = g.split(0, rank)) {
                check("split(0) size " + child.size() + " rank " + child.rank(),
                        child.size() == size && child.rank() == rank);
                try (DeviceArray d = child.toDevice(Array.full(DType.FLOAT32, 1, 3)); DeviceArray s = child.allSum(d)) {
                    check("split group all_sum float32", allEqual(s.toHost(), size));
                }
            }
            for (DType bad : List.of(DType.BOOL, DType.INT16, DType.UINT16, DType.COMPLEX64)) {
                try (DeviceArray d = g.allocate(bad, 2)) {
                    g.allSum(d).close();
                    check("unsupported dtype " + bad + " rejected", false);
                } catch (IllegalArgumentException expected) {
                    check("unsupported dtype " + bad + " rejected", true);
                }
            }
            if (peerStop) peerStop(g);
        } catch (RuntimeException e) {
            System.out.println("FAIL " + e.getClass().getSimpleName() + ": " + e.getMessage());
            failures++;
        }
        if (alone) creationAbort(backend, processEnv);
        System.out.println(failures == 0 ? "nccl: ALL CHECKS PASSED" : "nccl: " + failures + " CHECK(S) FAILED");
        return failures == 0 ? 0 : 1;
    }

    /**
     * A 2-rank world whose "rank 1" (a thread of this process) fetches the unique id and never joins: creation
     * must end in ncclCommAbort and a DeadlineExceededException after the deadline; the GPU must work after.
     */
    private void creationAbort(NcclBackend backend, Map<String, String> processEnv) throws IOException {
        Map<String, String> env = new HashMap<>(processEnv);
        String timeout = processEnv.getOrDefault("JDIST_GPU_CHECK_ABORT_TIMEOUT", "5s");
        env.put("JDIST_TIMEOUT", timeout);
        env.put("NCCL_HOST_IP", "127.0.0.1");
        env.put("NCCL_PORT", Integer.toString(freePort()));
        env.put("MLX_WORLD_SIZE", "2");
        env.put("MLX_NCCL_TIMEOUT", "60000");
        Map<String, String> rank1 = new HashMap<>(env);
        rank1.put("MLX_RANK", "1");
        env.put("MLX_RANK", "0");
        Thread fetcher = Thread.ofPlatform().daemon().start(() -> {
            try {
                NcclBootstrap.fetch(NcclConfig.fromEnv(rank1, true).orElseThrow());
            } catch (RuntimeException e) {
                System.out.println("FAIL the stand-in rank 1 could not fetch the id: " + e.getMessage());
            }
        });
        java.time.Duration deadline = dev.jdist.spi.JdistTimeout.parse(timeout);
        long t0 = System.nanoTime();
        try {
            backend.init(true, env).orElseThrow().close();
            check("abort path: creation with a rank that never joins fails", false);
        } catch (dev.jdist.DeadlineExceededException e) {
            double s = (System.nanoTime() - t0) / 1e9;
            System.out.printf("nccl: creation with a missing rank failed after %.1f s: %s%n", s, e.getMessage());
            check("abort path: creation with a rank that never joins ends in DeadlineExceededException (rank "
                    + e.rank().orElse(-1) + ", op " + e.operation().orElse("?") + ", deadline " + e.deadline().orElse(null) + ")",
                    e.rank().orElse(-1) == 0 && e.deadline().isPresent());
            check("abort path: it took the deadline, not much longer (" + String.format("%.1f", s) + " s)",
                    s >= deadline.toNanos() / 1e9 * 0.99 && s < deadline.toNanos() / 1e9 + 30);
        } catch (RuntimeException e) {
            check("abort path: creation with a rank that never joins ends in DeadlineExceededException, got "
                    + e.getClass().getSimpleName() + ": " + e.getMessage(), false);
        }
        try {
            fetcher.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Map<String, String> again = new HashMap<>(processEnv);
        again.put("NCCL_HOST_IP", "127.0.0.1");
        again.put("NCCL_PORT", Integer.toString(freePort()));
        again.put("MLX_RANK", "0");
        again.put("MLX_WORLD_SIZE", "1");
        try (NcclGroup g = (NcclGroup) backend.init(true, again).orElseThrow();
             DeviceArray d = g.toDevice(Array.full(DType.FLOAT32, 2, 8)); DeviceArray s = g.allSum(d)) {
            check("abort path: a new communicator works after the abort", allEqual(s.toHost(), 2));
        } catch (RuntimeException e) {
            check("abort path: a new communicator works after the abort (" + e + ")", false);
        }
    }

    /** Rank 1 stops itself; rank 0's next all_sum must end in DeadlineExceededException and close() within seconds. */
    private void peerStop(NcclGroup g) {
        if (g.size() < 2) {
            check("peer-stop needs 2 or more ranks", false);
            return;
        }
        try (DeviceArray d = g.toDevice(Array.full(DType.FLOAT32, 1, 256)); DeviceArray s = g.allSum(d)) {
            check("peer-stop: first all_sum", allEqual(s.toHost(), g.size()));
        }
        System.out.flush();
        if (g.rank() == 1) {
            System.out.println("nccl: rank 1 stops itself now (pid " + ProcessHandle.current().pid() + ")");
            System.out.flush();
            try {
                new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            } catch (IOException | InterruptedException e) {
                check("peer-stop: rank 1 could not stop itself: " + e, false);
            }
            return;
        }
        if (g.rank() != 0) return;
        try {
            Thread.sleep(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        long t0 = System.nanoTime();
        try (DeviceArray d = g.toDevice(Array.full(DType.FLOAT32, 1, 256))) {
            g.allSum(d).close();
            check("peer-stop: all_sum with a stopped peer fails", false);
        } catch (dev.jdist.DeadlineExceededException e) {
            System.out.printf("nccl: all_sum with a stopped peer failed after %.1f s: %s%n", (System.nanoTime() - t0) / 1e9,
                    e.getMessage());
            check("peer-stop: all_sum with a stopped peer ends in DeadlineExceededException (op "
                    + e.operation().orElse("?") + ")", e.rank().orElse(-1) == 0);
        } catch (RuntimeException e) {
            check("peer-stop: DeadlineExceededException expected, got " + e, false);
        }
        long t1 = System.nanoTime();
        try {
            g.close();
        } catch (RuntimeException e) {
            System.out.println("nccl: close after the failure: " + e.getMessage());
        }
        double closeSeconds = (System.nanoTime() - t1) / 1e9;
        check(String.format("peer-stop: close() after the failure returned in %.2f s", closeSeconds), closeSeconds < 15);
    }

    /** x_r[i] = r + 1 + (i mod 4): sum, max, min and the gathered blocks are exact in every dtype. */
    private static Array input(DType dt, int rank, int elements) {
        double[] v = new double[elements];
        for (int i = 0; i < elements; i++) v[i] = rank + 1 + (i % 4);
        return Array.fromDoubles(dt, v, elements);
    }

    private void deviceOps(NcclGroup g, DType dt, int rank, int size) {
        int e = 4 * size;
        Array x = input(dt, rank, e);
        try (DeviceArray d = g.toDevice(x);
             DeviceArray sum = g.allSum(d);
             DeviceArray max = g.allMax(d);
             DeviceArray min = g.allMin(d);
             DeviceArray all = g.allGather(d);
             DeviceArray part = g.sumScatter(d)) {
            Array s = sum.toHost();
            Array mx = max.toHost();
            Array mn = min.toHost();
            Array a = all.toHost();
            Array p = part.toHost();
            boolean okSum = true, okMax = true, okMin = true, okAll = true, okPart = true;
            for (int i = 0; i < e; i++) {
                double base = i % 4;
                okSum &= s.getDouble(i) == size * base + size * (size + 1) / 2.0;
                okMax &= mx.getDouble(i) == size + base;
                okMin &= mn.getDouble(i) == 1 + base;
            }
            for (int q = 0; q < size; q++) {
                for (int i = 0; i < e; i++) okAll &= a.getDouble((long) q * e + i) == q + 1 + (i % 4);
            }
            for (int i = 0; i < 4; i++) {
                okPart &= p.getDouble(i) == s.getDouble(rank * 4L + i);
            }
            check("device all_sum     " + dt, okSum);
            check("device all_max     " + dt, okMax);
            check("device all_min     " + dt, okMin);
            check("device all_gather  " + dt, okAll && a.size() == (long) e * size);
            check("device sum_scatter " + dt, okPart && p.size() == 4);
            g.allReduce(d, d, ReduceOp.SUM);
            check("device all_sum in place " + dt, equal(d.toHost(), s));
        } catch (RuntimeException ex) {
            System.out.println("FAIL device ops " + dt + ": " + ex.getMessage());
            failures++;
        }
    }

    private void hostOps(NcclGroup g, DType dt, int rank, int size) {
        int e = 4 * size;
        Array x = input(dt, rank, e);
        try {
            Array sum = Array.zerosLike(x);
            g.allReduce(x, sum, ReduceOp.SUM);
            Array all = Array.zeros(dt, e * size);
            g.allGather(x, all);
            Array part = Array.zeros(dt, 4);
            g.sumScatter(x, part);
            boolean ok = true;
            for (int i = 0; i < e; i++) ok &= sum.getDouble(i) == size * (i % 4) + size * (size + 1) / 2.0;
            for (int i = 0; i < 4; i++) ok &= part.getDouble(i) == sum.getDouble(rank * 4L + i);
            ok &= all.getDouble((long) rank * e) == rank + 1;
            check("staged host ops    " + dt, ok);
        } catch (RuntimeException ex) {
            System.out.println("FAIL staged host ops " + dt + ": " + ex.getMessage());
            failures++;
        }
    }

    private static boolean allEqual(Array a, double v) {
        for (long i = 0; i < a.size(); i++) if (a.getDouble(i) != v) return false;
        return true;
    }

    private static boolean equal(Array a, Array b) {
        if (a.size() != b.size()) return false;
        for (long i = 0; i < a.size(); i++) if (a.getDouble(i) != b.getDouble(i)) return false;
        return true;
    }

    private void check(String what, boolean ok) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) failures++;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
