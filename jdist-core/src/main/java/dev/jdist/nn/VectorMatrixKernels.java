package dev.jdist.nn;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link MatrixKernels}' dot product and {@code axpy} on the Vector API. Only {@link MatrixKernels}
 * refers to this class, and only when the {@code jdk.incubator.vector} module is in the JVM.
 */
final class VectorMatrixKernels {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private VectorMatrixKernels() {}

    static float dot(float[] a, int ao, float[] b, int bo, int len) {
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

    static void axpy(float alpha, float[] x, int xo, float[] y, int yo, int len) {
        int t = 0;
        int bound = S.loopBound(len);
        FloatVector va = FloatVector.broadcast(S, alpha);
        for (; t < bound; t += S.length()) {
            FloatVector.fromArray(S, x, xo + t).fma(va, FloatVector.fromArray(S, y, yo + t)).intoArray(y, yo + t);
        }
        for (; t < len; t++) y[yo + t] = Math.fma(x[xo + t], alpha, y[yo + t]);
    }
}
