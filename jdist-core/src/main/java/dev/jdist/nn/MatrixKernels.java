package dev.jdist.nn;

import dev.jdist.reduce.Kernels;

/**
 * The few dense float32 kernels the layers need, on row-major {@code float[]} matrices. Each kernel
 * works along contiguous rows so that the inner loop is a dot product or a {@code y += a*x}: with
 * the Vector API module in the JVM ({@link Kernels}) those two run on the Vector API
 * ({@link VectorMatrixKernels}), otherwise as plain loops (the {@code axpy} loop is auto-vectorised
 * by C2; the dot product keeps {@value #DOT_LANES} partial sums).
 *
 * <p>Results are reproducible: every product is a fused multiply-add and every sum has a fixed
 * order, so the same inputs give the same bits whether the code runs interpreted or compiled. The
 * order depends on the kernels: the Vector API dot product keeps one partial sum per vector lane, so
 * its last bits can differ from the portable one's and between machines of different vector widths
 * (the layers need the same bits on every rank of a job, which both give; not across kernel sets).
 */
public final class MatrixKernels {
    private static final boolean VECTOR_API = Kernels.vectorApi();
    /** Partial sums of the portable dot product (a fixed order, whatever the machine). */
    static final int DOT_LANES = 8;

    private MatrixKernels() {}

    /**
     * {@code out[m×n] = a[m×k] · b[n×k]ᵀ (+ bias[n])}: the linear layer's {@code x·Wᵀ + b} with
     * {@code W} stored {@code [out, in]}. {@code bias} may be null.
     */
    public static void matmulTransposed(float[] a, int m, int k, float[] b, int n, float[] bias, float[] out) {
        check(a, (long) m * k, "a");
        check(b, (long) n * k, "b");
        check(out, (long) m * n, "out");
        if (bias != null) check(bias, n, "bias");
        for (int i = 0; i < m; i++) {
            int ai = i * k;
            for (int j = 0; j < n; j++) {
                float s = dot(a, ai, b, j * k, k);
                out[i * n + j] = bias == null ? s : s + bias[j];
            }
        }
    }

    /** {@code out[m×n] = a[m×k] · b[k×n]} (e.g. the input gradient {@code dy · W}). */
    public static void matmul(float[] a, int m, int k, float[] b, int n, float[] out) {
        check(a, (long) m * k, "a");
        check(b, (long) k * n, "b");
        check(out, (long) m * n, "out");
        java.util.Arrays.fill(out, 0, m * n, 0f);
        for (int i = 0; i < m; i++) {
            for (int p = 0; p < k; p++) {
                float s = a[i * k + p];
                if (s != 0f) axpy(s, b, p * n, out, i * n, n);
            }
        }
    }

    /** {@code out[k×n] = a[m×k]ᵀ · b[m×n]} (e.g. the weight gradient {@code dyᵀ · x}). */
    public static void matmulTransposedA(float[] a, int m, int k, float[] b, int n, float[] out) {
        check(a, (long) m * k, "a");
        check(b, (long) m * n, "b");
        check(out, (long) k * n, "out");
        java.util.Arrays.fill(out, 0, k * n, 0f);
        for (int i = 0; i < m; i++) {
            for (int p = 0; p < k; p++) {
                float s = a[i * k + p];
                if (s != 0f) axpy(s, b, i * n, out, p * n, n);
            }
        }
    }

    /** {@code Σ a[ao+t]·b[bo+t]} for {@code t < len}. */
    public static float dot(float[] a, int ao, float[] b, int bo, int len) {
        return VECTOR_API ? VectorMatrixKernels.dot(a, ao, b, bo, len) : portableDot(a, ao, b, bo, len);
    }

    /** {@code y[yo+t] += alpha·x[xo+t]} for {@code t < len}. */
    public static void axpy(float alpha, float[] x, int xo, float[] y, int yo, int len) {
        if (VECTOR_API) {
            VectorMatrixKernels.axpy(alpha, x, xo, y, yo, len);
        } else {
            for (int t = 0; t < len; t++) y[yo + t] = Math.fma(x[xo + t], alpha, y[yo + t]);
        }
    }

    /** {@value #DOT_LANES} independent partial sums (lane {@code j} takes elements {@code j, j+8, ...}), added in lane order, then the tail. */
    static float portableDot(float[] a, int ao, float[] b, int bo, int len) {
        float s0 = 0f, s1 = 0f, s2 = 0f, s3 = 0f, s4 = 0f, s5 = 0f, s6 = 0f, s7 = 0f;
        int t = 0;
        int bound = len - len % DOT_LANES;
        for (; t < bound; t += DOT_LANES) {
            int i = ao + t, j = bo + t;
            s0 = Math.fma(a[i], b[j], s0);
            s1 = Math.fma(a[i + 1], b[j + 1], s1);
            s2 = Math.fma(a[i + 2], b[j + 2], s2);
            s3 = Math.fma(a[i + 3], b[j + 3], s3);
            s4 = Math.fma(a[i + 4], b[j + 4], s4);
            s5 = Math.fma(a[i + 5], b[j + 5], s5);
            s6 = Math.fma(a[i + 6], b[j + 6], s6);
            s7 = Math.fma(a[i + 7], b[j + 7], s7);
        }
        float s = 0f;
        if (bound > 0) s = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
        for (; t < len; t++) s = Math.fma(a[ao + t], b[bo + t], s);
        return s;
    }

    private static void check(float[] m, long need, String name) {
        if (m.length < need) {
            throw new IllegalArgumentException("matrix '" + name + "' holds " + m.length + " floats but the shapes need "
                    + need);
        }
    }
}
