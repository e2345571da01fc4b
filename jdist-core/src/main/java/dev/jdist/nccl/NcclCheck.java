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
 * communicator (unless the four §6.1 variables are set, in which case it joins that world) and runs
 * every op — all_sum, all_max, all_min, all_gather, sum_scatter — for every dtype NCCL supports on
 * device memory ({@link DeviceArray}), the same through host staging, a split, and the
 * unsupported-dtype check. One line per check; exit status 0 when all pass, 1 when one fails, 2 when
 * the backend is unavailable.
 */
public final class NcclCheck {

    private static final DType[] SUPPORTED = {DType.INT8, DType.UINT8, DType.INT32, DType.UINT32, DType.INT64,
        DType.UINT64, DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16};

    private int failures;

    private NcclCheck() {}

    public static void main(String[] args) throws IOException {
        System.exit(new NcclCheck().run(System.getenv()));
    }

    int run(Map<String, String> processEnv) throws IOException {
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
        if (NcclConfig.fromEnv(processEnv, false).isEmpty()) {
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
        } catch (RuntimeException e) {
            System.out.println("FAIL " + e.getClass().getSimpleName() + ": " + e.getMessage());
            failures++;
        }
        System.out.println(failures == 0 ? "nccl: ALL CHECKS PASSED" : "nccl: " + failures + " CHECK(S) FAILED");
        return failures == 0 ? 0 : 1;
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
