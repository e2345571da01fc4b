package dev.jdist.nn;

import dev.jdist.Array;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * A fully connected layer {@code y = x·Wᵀ + b} over float32, with MLX's parameter layout: weight
 * {@code [out, in]}, bias {@code [out]} (or none). The parameters are arrays that training code
 * updates in place (see {@link Sgd}) and averages across ranks (see {@link Gradients}).
 */
public final class Linear {
    private final Array weight;
    private final Array bias;       // null when the layer has no bias
    private final int in;
    private final int out;

    /** The gradients of one {@link #backward} call: weight and bias (null without bias), and the input gradient. */
    public record Grads(Array weight, Array bias, Array input) {
        /** The parameter gradients in {@link Linear#parameters()} order. */
        public List<Array> parameters() {
            return bias == null ? List.of(weight) : List.of(weight, bias);
        }
    }

    /** A layer over the given parameters (not copied): {@code weight} float32 {@code [out, in]}, {@code bias} float32 {@code [out]} or null. */
    public Linear(Array weight, Array bias) {
        Floats.requireFloat32(weight, "Linear weight");
        if (weight.ndim() != 2) {
            throw new IllegalArgumentException("Linear weight must have shape [out, in] but has shape "
                    + Arrays.toString(weight.shape()));
        }
        this.weight = weight;
        this.out = weight.shape(0);
        this.in = weight.shape(1);
        if (bias != null) {
            Floats.requireFloat32(bias, "Linear bias");
            if (bias.ndim() != 1 || bias.shape(0) != out) {
                throw new IllegalArgumentException("Linear bias must have shape [" + out + "] to match weight "
                        + Arrays.toString(weight.shape()) + " but has shape " + Arrays.toString(bias.shape()));
            }
        }
        this.bias = bias;
    }

    /**
     * A layer initialised as MLX's {@code nn.Linear}: weight and bias uniform in
     * {@code [-1/√in, 1/√in)}, drawn from {@code rng} (weight row by row, then bias).
     */
    public static Linear random(int in, int out, boolean bias, Random rng) {
        if (in <= 0 || out <= 0) {
            throw new IllegalArgumentException("Linear needs positive input and output sizes, got in=" + in + ", out=" + out);
        }
        float scale = (float) Math.sqrt(1.0 / in);
        float[] w = new float[Math.multiplyExact(in, out)];
        for (int i = 0; i < w.length; i++) w[i] = (rng.nextFloat() * 2f - 1f) * scale;
        float[] b = null;
        if (bias) {
            b = new float[out];
            for (int i = 0; i < out; i++) b[i] = (rng.nextFloat() * 2f - 1f) * scale;
        }
        return new Linear(Array.fromFloats(w, out, in), b == null ? null : Array.fromFloats(b, out));
    }

    public int inputDims() { return in; }

    public int outputDims() { return out; }

    /** The weight, {@code [out, in]} (the live parameter, not a copy). */
    public Array weight() { return weight; }

    /** The bias, {@code [out]}, or null. */
    public Array bias() { return bias; }

    /** The parameters: weight, then bias if present. */
    public List<Array> parameters() {
        List<Array> p = new ArrayList<>(2);
        p.add(weight);
        if (bias != null) p.add(bias);
        return List.copyOf(p);
    }

    /** {@code x·Wᵀ + b} for {@code x} of shape {@code [..., in]}; the result has shape {@code [..., out]}. */
    public Array forward(Array x) {
        return Floats.array(forward(x, true), Floats.withLastDim(x, out));
    }

    /** {@code x·Wᵀ}, optionally {@code + b}, as a flat row-major result. */
    float[] forward(Array x, boolean addBias) {
        int rows = Floats.rows(x, in, "Linear input (" + in + " → " + out + ")");
        float[] xv = Floats.read(x, "Linear input");
        float[] y = new float[Math.multiplyExact(rows, out)];
        MatrixKernels.matmulTransposed(xv, rows, in, Floats.read(weight, "weight"), out,
                addBias && bias != null ? Floats.read(bias, "bias") : null, y);
        return y;
    }

    /**
     * The gradients for output gradient {@code dy} ({@code [..., out]}) at input {@code x}
     * ({@code [..., in]}): {@code dW = dyᵀ·x}, {@code db = Σ dy}, {@code dx = dy·W}.
     */
    public Grads backward(Array x, Array dy) {
        int rows = Floats.rows(x, in, "Linear input (" + in + " → " + out + ")");
        int dyRows = Floats.rows(dy, out, "Linear output gradient (" + in + " → " + out + ")");
        if (rows != dyRows) {
            throw new IllegalArgumentException("the output gradient has " + dyRows + " rows but the input has " + rows
                    + "; pass the gradient of this layer's output for the same batch");
        }
        float[] xv = Floats.read(x, "Linear input");
        float[] g = Floats.read(dy, "Linear output gradient");
        float[] dw = new float[Math.multiplyExact(out, in)];
        MatrixKernels.matmulTransposedA(g, rows, out, xv, in, dw);
        Array db = null;
        if (bias != null) {
            float[] b = new float[out];
            for (int r = 0; r < rows; r++) MatrixKernels.axpy(1f, g, r * out, b, 0, out);
            db = Array.fromFloats(b, out);
        }
        float[] dx = new float[Math.multiplyExact(rows, in)];
        MatrixKernels.matmul(g, rows, out, Floats.read(weight, "weight"), in, dx);
        return new Grads(Array.fromFloats(dw, out, in), db, Floats.array(dx, x.shape()));
    }

    @Override
    public String toString() {
        return "Linear(input_dims=" + in + ", output_dims=" + out + ", bias=" + (bias != null) + ")";
    }
}
