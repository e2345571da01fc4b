package dev.jdist.nn;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The few dense float32 kernels the layers need, on row-major {@code float[]} matrices, vectorised
 * with the Vector API ({@code --add-modules=jdk.incubator.vector}). Each kernel works along
 * contiguous rows so that the inner loop is a vector dot product or a vector {@code y += a*x}.
 *
 * <p>Results are reproducible: every product is a fused multiply-add and every sum has a fixed
 * order, so the same inputs give the same bits whether the code runs interpreted or compiled (on
 * machines with the same vector width).
 */
public final class MatrixKernels {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

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
        int t = 0;
        int bound = S.loopBound(len);
        FloatVector acc = FloatVector.zero(S);
        for (; t < bound; t += S.length()) {
            acc = FloatVector.fromArray(S, a, ao + t).fma(FloatVector.fromArray(S, b, bo + t), acc);
        }
        // Lanes are added in lane order by hand: reduceLanes(ADD)'s order is unspecified and differs
        // between interpreted and JIT-compiled code, which would make results vary from run to run.
        float s = 0f;
        if (bound > 0) {
            float[] lanes = acc.toArray();
            for (float lane : lanes) s += lane;
        }
        for (; t < len; t++) s = Math.fma(a[ao + t], b[bo + t], s);
        return s;
    }

    /** {@code y[yo+t] += alpha·x[xo+t]} for {@code t < len}. */
    public static void axpy(float alpha, float[] x, int xo, float[] y, int yo, int len) {
        int t = 0;
        int bound = S.loopBound(len);
        FloatVector va = FloatVector.broadcast(S, alpha);
        for (; t < bound; t += S.length()) {
            FloatVector.fromArray(S, x, xo + t).fma(va, FloatVector.fromArray(S, y, yo + t)).intoArray(y, yo + t);
        }
        for (; t < len; t++) y[yo + t] = Math.fma(x[xo + t], alpha, y[yo + t]);
    }

    private static void check(float[] m, long need, String name) {
        if (m.length < need) {
            throw new IllegalArgumentException("matrix '" + name + "' holds " + m.length + " floats but the shapes need "
                    + need);
        }
    }
}
