package dev.jdist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/** Expected strings follow MLX's C++ printer (mlx/utils.cpp) with default options; %g values checked against C printf. */
class ArrayFormatTest {

    @Test
    void theDesignDocumentsExample() {
        assertThat(Array.full(DType.FLOAT32, 4, 10)).hasToString("array([4, 4, 4, ..., 4, 4, 4], dtype=float32)");
    }

    @Test
    void summarisingIsPerAxisAboveSixEntries() {
        assertThat(Array.arange(DType.INT32, 6)).hasToString("array([0, 1, 2, 3, 4, 5], dtype=int32)");
        assertThat(Array.arange(DType.INT32, 7)).hasToString("array([0, 1, 2, ..., 4, 5, 6], dtype=int32)");
        assertThat(Array.arange(DType.INT32, 16).reshape(8, 2)).hasToString(
                "array([[0, 1],\n       [2, 3],\n       [4, 5],\n       ...,\n       [10, 11],\n       [12, 13],\n       [14, 15]], dtype=int32)");
    }

    @Test
    void zeroDimensionalAndEmpty() {
        assertThat(Array.scalar(DType.FLOAT32, 1.5)).hasToString("array(1.5, dtype=float32)");
        assertThat(Array.scalar(DType.BOOL, 1)).hasToString("array(true, dtype=bool)");
        assertThat(Array.zeros(DType.FLOAT32, 0)).hasToString("array([], dtype=float32)");
        assertThat(Array.zeros(DType.FLOAT32, 2, 0)).hasToString("array([[],\n       []], dtype=float32)");
    }

    @Test
    void nestingIndentsUnderTheFirstBracket() {
        assertThat(Array.arange(DType.INT32, 6).reshape(2, 3)).hasToString("array([[0, 1, 2],\n       [3, 4, 5]], dtype=int32)");
        assertThat(Array.arange(DType.INT64, 8).reshape(2, 2, 2)).hasToString(
                "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n        [6, 7]]], dtype=int64)");
    }

    @Test
    void elementsOfEachDtype() {
        assertThat(Array.of(true, false)).hasToString("array([true, false], dtype=bool)");
        assertThat(Array.fromLongs(DType.UINT64, new long[] {-1}, 1)).hasToString("array([18446744073709551615], dtype=uint64)");
        assertThat(Array.fromLongs(DType.INT8, new long[] {-128, 127}, 2)).hasToString("array([-128, 127], dtype=int8)");
        assertThat(Array.fromLongs(DType.UINT8, new long[] {255}, 1)).hasToString("array([255], dtype=uint8)");
        assertThat(Array.of(0.1f, 1f / 3, -2.5f)).hasToString("array([0.1, 0.333333, -2.5], dtype=float32)");
        assertThat(Array.fromDoubles(DType.FLOAT16, new double[] {0.1, 65504}, 2)).hasToString("array([0.0999756, 65504], dtype=float16)");
        assertThat(Array.fromDoubles(DType.BFLOAT16, new double[] {0.1}, 1)).hasToString("array([0.100098], dtype=bfloat16)");
        assertThat(Array.of(1e100, Double.NaN, Double.NEGATIVE_INFINITY, -0.0)).hasToString("array([1e+100, nan, -inf, -0], dtype=float64)");
        assertThat(Array.fromComplex(new float[] {1, 2, 1, -2, 0, -0f, 1.5f, Float.NaN}, 4))
                .hasToString("array([1+2j, 1-2j, 0+-0j, 1.5+nanj], dtype=complex64)");
    }

    @ParameterizedTest
    @CsvSource({
        "4.0, 4", "0.1, 0.1", "3.14159265, 3.14159", "1e-5, 1e-05", "0.0001, 0.0001", "123456.0, 123456",
        "1234567.0, 1.23457e+06", "999999.5, 1e+06", "0.000123456789, 0.000123457", "-2.5, -2.5", "1e100, 1e+100",
        "4.9e-324, 4.94066e-324", "100000.0, 100000", "1e16, 1e+16", "-0.0, -0", "0.30000001192092896, 0.3",
        "0.3333333333333333, 0.333333"
    })
    void floatsPrintLikeCPercentG(double v, String expected) {
        assertThat(ArrayFormat.general(v)).isEqualTo(expected);
    }
}
