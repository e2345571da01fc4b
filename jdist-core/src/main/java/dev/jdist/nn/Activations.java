package dev.jdist.nn;

import dev.jdist.Array;

/** Element-wise activations on float32 arrays; each returns a new array of the input's shape. */
public final class Activations {
    private Activations() {}

    /** {@code max(x, 0)}. */
    public static Array relu(Array x) {
        float[] v = Floats.read(x, "relu input");
        for (int i = 0; i < v.length; i++) v[i] = v[i] > 0f ? v[i] : 0f;
        return Floats.array(v, x.shape());
    }

    /** The gradient through {@link #relu}: {@code dy} where {@code x > 0}, else 0. */
    public static Array reluBackward(Array x, Array dy) {
        float[] xv = Floats.read(x, "relu input");
        float[] g = Floats.read(dy, "relu output gradient");
        sameSize(xv, g);
        for (int i = 0; i < g.length; i++) if (!(xv[i] > 0f)) g[i] = 0f;
        return Floats.array(g, dy.shape());
    }

    /** SiLU (swish): {@code x · sigmoid(x)}, as MLX's {@code nn.silu}. */
    public static Array silu(Array x) {
        float[] v = Floats.read(x, "silu input");
        for (int i = 0; i < v.length; i++) v[i] = v[i] * sigmoid(v[i]);
        return Floats.array(v, x.shape());
    }

    /** The gradient through {@link #silu}: {@code dy · σ(x)·(1 + x·(1 − σ(x)))}. */
    public static Array siluBackward(Array x, Array dy) {
        float[] xv = Floats.read(x, "silu input");
        float[] g = Floats.read(dy, "silu output gradient");
        sameSize(xv, g);
        for (int i = 0; i < g.length; i++) {
            float s = sigmoid(xv[i]);
            g[i] *= s * (1f + xv[i] * (1f - s));
        }
        return Floats.array(g, dy.shape());
    }

    private static float sigmoid(float x) {
        return (float) (1.0 / (1.0 + Math.exp(-x)));
    }

    private static void sameSize(float[] x, float[] dy) {
        if (x.length != dy.length) {
            throw new IllegalArgumentException("the gradient has " + dy.length + " elements but the input has " + x.length
                    + "; pass the gradient of this activation's output");
        }
    }
}
