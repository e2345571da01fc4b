package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.reduce.Kernels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class MatrixKernelsTest {

    private static float[] random(Random rng, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = rng.nextFloat() * 2 - 1;
        return v;
    }

    /** Sizes around vector widths (4, 8, 16 lanes) so that the scalar tails run too. */
    @ParameterizedTest(name = "m={0} k={1} n={2}")
    @CsvSource({"1, 1, 1", "3, 7, 5", "2, 16, 3", "5, 17, 33", "8, 64, 9", "4, 100, 31"})
    void kernelsMatchTheTextbookLoopsInDouble(int m, int k, int n) {
        Random rng = new Random(31L * m + 7L * k + n);
        float[] a = random(rng, m * k), bt = random(rng, n * k), b = random(rng, k * n), bias = random(rng, n);
        float[] out = new float[m * n];
        MatrixKernels.matmulTransposed(a, m, k, bt, n, bias, out);
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = bias[j];
                for (int p = 0; p < k; p++) s += (double) a[i * k + p] * bt[j * k + p];
                assertThat((double) out[i * n + j]).isCloseTo(s, within(1e-5 * k));
            }
        }
        MatrixKernels.matmul(a, m, k, b, n, out);
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) s += (double) a[i * k + p] * b[p * n + j];
                assertThat((double) out[i * n + j]).isCloseTo(s, within(1e-5 * k));
            }
        }
        float[] c = random(rng, m * n);
        float[] outT = new float[k * n];
        MatrixKernels.matmulTransposedA(a, m, k, c, n, outT);
        for (int p = 0; p < k; p++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int i = 0; i < m; i++) s += (double) a[i * k + p] * c[i * n + j];
                assertThat((double) outT[p * n + j]).isCloseTo(s, within(1e-5 * m));
            }
        }
    }

    /** axpy is element-wise fused multiply-adds: the same bits from both kernel sets; dot products differ only in summation order. */
    @Test
    void theVectorAndPortableKernelsAgree() {
        Random rng = new Random(11);
        for (int len : new int[] {0, 1, 7, 8, 9, 16, 33, 100, 1000}) {
            float[] a = random(rng, len + 3), b = random(rng, len + 5);
            double exact = 0;
            for (int t = 0; t < len; t++) exact += (double) a[3 + t] * b[5 + t];
            float portable = MatrixKernels.portableDot(a, 3, b, 5, len);
            assertThat((double) portable).as("portable dot, len " + len).isCloseTo(exact, within(1e-5 * (len + 1)));
            assertThat(MatrixKernels.dot(a, 3, b, 5, len)).as("dot twice, len " + len)
                    .isEqualTo(MatrixKernels.dot(a, 3, b, 5, len));
            if (Kernels.vectorApi()) {
                assertThat((double) VectorMatrixKernels.dot(a, 3, b, 5, len)).isCloseTo(exact, within(1e-5 * (len + 1)));
                float[] y1 = random(new Random(len), len + 2), y2 = y1.clone();
                VectorMatrixKernels.axpy(0.37f, a, 3, y1, 2, len);
                for (int t = 0; t < len; t++) y2[2 + t] = Math.fma(a[3 + t], 0.37f, y2[2 + t]);
                assertThat(y1).as("axpy, len " + len).isEqualTo(y2);
            } else {
                assertThat(MatrixKernels.dot(a, 3, b, 5, len)).isEqualTo(portable);
            }
        }
    }

    @Test
    void tooSmallBuffersAreRejectedWithTheSizes() {
        assertThatThrownBy(() -> MatrixKernels.matmulTransposed(new float[5], 2, 3, new float[6], 2, null, new float[4]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a'").hasMessageContaining("6");
    }

    @Test
    void activations() {
        Array x = Array.of(-2f, 0f, 3f);
        assertThat(Activations.relu(x).toFloatArray()).containsExactly(0f, 0f, 3f);
        assertThat(Activations.reluBackward(x, Array.of(5f, 5f, 5f)).toFloatArray()).containsExactly(0f, 0f, 5f);
        float[] s = Activations.silu(x).toFloatArray();
        assertThat(s[0]).isCloseTo((float) (-2 / (1 + Math.exp(2))), within(1e-6f));
        assertThat(s[1]).isZero();
        assertThat(s[2]).isCloseTo((float) (3 / (1 + Math.exp(-3))), within(1e-6f));
        // silu' by central differences
        float h = 1e-3f;
        float[] d = Activations.siluBackward(x, Array.of(1f, 1f, 1f)).toFloatArray();
        float[] up = Activations.silu(Array.of(-2f + h, h, 3f + h)).toFloatArray();
        float[] dn = Activations.silu(Array.of(-2f - h, -h, 3f - h)).toFloatArray();
        for (int i = 0; i < 3; i++) assertThat(d[i]).isCloseTo((up[i] - dn[i]) / (2 * h), within(2e-3f));
        assertThatThrownBy(() -> Activations.relu(Array.of(1.0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("float32").hasMessageContaining("float64");
    }
}
