package dev.jdist.nn;

import dev.jdist.Array;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class LinearTest {

    @Test
    void forwardIsXTimesWeightTransposedPlusBias() {
        Linear l = new Linear(Array.fromFloats(new float[] {1, 2, 3, 4, 5, 6}, 2, 3), Array.of(10f, 20f));
        Array y = l.forward(Array.fromFloats(new float[] {1, 0, -1, 2, 2, 2}, 2, 3));
        assertThat(y.shape()).containsExactly(2, 2);
        assertThat(y.toFloatArray()).containsExactly(1 - 3 + 10, 4 - 6 + 20, 12 + 10, 30 + 20);
        assertThat(l.forward(Array.of(1f, 1f, 1f)).toFloatArray()).containsExactly(16f, 35f);
    }

    @Test
    void randomInitIsUniformInPlusMinusOneOverSqrtIn() {
        Linear l = Linear.random(16, 8, true, new Random(0));
        for (Array p : l.parameters()) {
            for (float v : p.toFloatArray()) assertThat(Math.abs(v)).isLessThanOrEqualTo(0.25f);
        }
        assertThat(Linear.random(16, 8, true, new Random(0)).weight().toFloatArray()).containsExactly(l.weight().toFloatArray());
        assertThat(Linear.random(4, 3, false, new Random(1)).parameters()).hasSize(1);
    }

    @Test
    void backwardMatchesFiniteDifferencesOfASquaredLoss() {
        Random rng = new Random(5);
        Linear l = Linear.random(5, 3, true, rng);
        float[] xv = new float[4 * 5];
        for (int i = 0; i < xv.length; i++) xv[i] = (float) rng.nextGaussian();
        Array x = Array.fromFloats(xv, 4, 5);
        // loss = 0.5 * sum(y^2) => dy = y
        Array y = l.forward(x);
        Linear.Grads g = l.backward(x, y);
        double h = 1e-2;
        for (Array p : List.of(l.weight(), l.bias())) {
            Array grad = p == l.weight() ? g.weight() : g.bias();
            for (int i = 0; i < p.size(); i += 2) {
                double orig = p.getDouble(i);
                p.setDouble(i, orig + h);
                double up = loss(l, x);
                p.setDouble(i, orig - h);
                double dn = loss(l, x);
                p.setDouble(i, orig);
                assertThat(grad.getDouble(i)).isCloseTo((up - dn) / (2 * h), within(2e-2));
            }
        }
        assertThat(g.input().shape()).containsExactly(4, 5);
        for (int i = 0; i < xv.length; i += 3) {
            float[] xp = xv.clone(), xm = xv.clone();
            xp[i] += (float) h;
            xm[i] -= (float) h;
            double num = (loss(l, Array.fromFloats(xp, 4, 5)) - loss(l, Array.fromFloats(xm, 4, 5))) / (2 * h);
            assertThat(g.input().getDouble(i)).isCloseTo(num, within(2e-2));
        }
    }

    private static double loss(Linear l, Array x) {
        double s = 0;
        for (float v : l.forward(x).toFloatArray()) s += 0.5 * v * v;
        return s;
    }

    @Test
    void sgdStepsAgainstTheGradient() {
        Array p = Array.of(1f, 2f);
        new Sgd(0.5f).update(List.of(p), List.of(Array.of(2f, -2f)));
        assertThat(p.toFloatArray()).containsExactly(0f, 3f);
        assertThatThrownBy(() -> new Sgd(0f)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("learning rate");
        assertThatThrownBy(() -> new Sgd(0.1f).update(p, Array.of(1f))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2 elements").hasMessageContaining("1 elements");
    }

    @Test
    void badShapesAreArgumentErrorsNamingTheShapes() {
        assertThatThrownBy(() -> new Linear(Array.zeros(dev.jdist.DType.FLOAT32, 3), null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[out, in]").hasMessageContaining("[3]");
        assertThatThrownBy(() -> new Linear(Array.zeros(dev.jdist.DType.FLOAT32, 2, 3), Array.zeros(dev.jdist.DType.FLOAT32, 3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[2]");
        Linear l = Linear.random(3, 2, true, new Random(0));
        assertThatThrownBy(() -> l.forward(Array.zeros(dev.jdist.DType.FLOAT32, 2, 4)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[..., 3]").hasMessageContaining("[2, 4]");
    }
}
