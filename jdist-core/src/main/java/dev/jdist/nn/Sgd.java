package dev.jdist.nn;

import dev.jdist.Array;

import java.lang.foreign.MemorySegment;
import java.util.List;

/** Plain stochastic gradient descent: {@code p := p − lr·g}, in place, on float32 parameters. */
public final class Sgd {
    private final float learningRate;

    public Sgd(float learningRate) {
        if (!(learningRate > 0f) || Float.isInfinite(learningRate)) {
            throw new IllegalArgumentException("the learning rate must be a positive finite number, got " + learningRate);
        }
        this.learningRate = learningRate;
    }

    public float learningRate() { return learningRate; }

    /** Updates every parameter with the gradient at the same position. */
    public void update(List<Array> parameters, List<Array> gradients) {
        if (parameters.size() != gradients.size()) {
            throw new IllegalArgumentException(parameters.size() + " parameters but " + gradients.size()
                    + " gradients; pass one gradient per parameter, in the same order");
        }
        for (int i = 0; i < parameters.size(); i++) update(parameters.get(i), gradients.get(i));
    }

    /** {@code p := p − lr·g}. */
    public void update(Array p, Array g) {
        Floats.requireFloat32(p, "parameter");
        Floats.requireFloat32(g, "gradient");
        if (p.size() != g.size()) {
            throw new IllegalArgumentException("a parameter of " + p.size() + " elements got a gradient of " + g.size()
                    + " elements; pass the gradient of that parameter");
        }
        float[] pv = Floats.read(p, "parameter");
        float[] gv = Floats.read(g, "gradient");
        MatrixKernels.axpy(-learningRate, gv, 0, pv, 0, pv.length);
        MemorySegment.copy(pv, 0, p.segment(), Floats.F32, 0, pv.length);
    }
}
