package dev.jdist;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * MLX-style printing, following MLX's C++ {@code operator<<(std::ostream&, array)} with default
 * print options (what {@code std::cout << x} shows):
 *
 * <ul>
 *   <li>{@code array(<data>, dtype=<name>)}; a 0-d array prints its one element without brackets.</li>
 *   <li>Each axis prints {@code [a, b, c]}; elements of the last axis are separated by {@code ", "},
 *       sub-arrays of outer axes by {@code ",\n"} followed by {@code 7 + axis} spaces (aligning under
 *       the first bracket after {@code "array("}). No column padding, no blank lines between blocks.</li>
 *   <li>Summarising is per axis and does not depend on the total size: an axis longer than 6 shows
 *       its first 3 entries, {@code ...}, and its last 3.</li>
 *   <li>bool prints {@code true}/{@code false}; integers in decimal (uint64 unsigned).</li>
 *   <li>float16, bfloat16, float32 and float64 print like C's {@code %g} with 6 significant digits
 *       (the stream default): {@code 4}, {@code 0.1}, {@code 3.14159}, {@code 1e-05},
 *       {@code 1.23457e+06}, {@code -0}, {@code inf}, {@code -inf}, {@code nan} (MLX on macOS prints
 *       every NaN as {@code nan}; glibc would print {@code -nan} for a negative one).</li>
 *   <li>complex64: real part, then {@code +imag j} when the imaginary part is {@code >= 0} or NaN,
 *       else {@code -|imag| j}: {@code 1+2j}, {@code 1-2j}, {@code 0+-0j} (−0 ≥ 0 holds).</li>
 * </ul>
 */
final class ArrayFormat {
    private static final int EDGE = 3;            // MLX's num_print
    private static final int PRECISION = 6;       // std::ostream default precision

    private ArrayFormat() {}

    static String format(Array a) {
        StringBuilder sb = new StringBuilder("array(");
        if (a.ndim() == 0) {
            element(sb, a, 0);
        } else {
            long[] strides = new long[a.ndim()];
            long stride = 1;
            for (int d = a.ndim() - 1; d >= 0; d--) {
                strides[d] = stride;
                stride *= a.shape(d);
            }
            subarray(sb, a, strides, 0, 0);
        }
        return sb.append(", dtype=").append(a.dtype().mlxName()).append(')').toString();
    }

    private static void subarray(StringBuilder sb, Array a, long[] strides, long index, int dim) {
        int n = a.shape(dim);
        boolean last = dim == a.ndim() - 1;
        String separator = last ? ", " : ",\n" + " ".repeat(7 + dim);
        sb.append('[');
        for (int i = 0; i < n; i++) {
            if (i > 0) sb.append(separator);
            if (i == EDGE && n > 2 * EDGE) {
                sb.append("...");
                i = n - EDGE - 1;
            } else if (last) {
                element(sb, a, index + i * strides[dim]);
            } else {
                subarray(sb, a, strides, index + i * strides[dim], dim + 1);
            }
        }
        sb.append(']');
    }

    private static void element(StringBuilder sb, Array a, long i) {
        switch (a.dtype()) {
            case BOOL -> sb.append(a.getLong(i) != 0 ? "true" : "false");
            case FLOAT16, BFLOAT16, FLOAT32, FLOAT64 -> sb.append(general(a.getDouble(i)));
            case COMPLEX64 -> {
                float re = (float) a.getDouble(i);
                float im = a.getImag(i);
                sb.append(general(re));
                if (im >= 0 || Float.isNaN(im)) sb.append('+').append(general(im));
                else sb.append('-').append(general(-im));
                sb.append('j');
            }
            case UINT64 -> sb.append(Long.toUnsignedString(a.getLong(i)));
            default -> sb.append(a.getLong(i));
        }
    }

    /** C's {@code %g} with precision 6: fixed or scientific by the rounded exponent, trailing zeros removed. */
    static String general(double v) {
        if (Double.isNaN(v)) return "nan";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        if (v == 0) return (Double.doubleToRawLongBits(v) < 0) ? "-0" : "0";
        // Exact binary value, rounded once to 6 significant digits (printf rounds to nearest even on ties).
        BigDecimal rounded = new BigDecimal(v).round(new MathContext(PRECISION, RoundingMode.HALF_EVEN));
        int exponent = rounded.precision() - rounded.scale() - 1;
        if (exponent >= -4 && exponent < PRECISION) {
            return stripZeros(rounded.setScale(Math.max(0, PRECISION - 1 - exponent), RoundingMode.UNNECESSARY).toPlainString());
        }
        BigDecimal mantissa = rounded.movePointLeft(exponent);
        String m = stripZeros(mantissa.setScale(PRECISION - 1, RoundingMode.UNNECESSARY).toPlainString());
        int e = Math.abs(exponent);
        return m + "e" + (exponent < 0 ? '-' : '+') + (e < 10 ? "0" : "") + e;
    }

    private static String stripZeros(String s) {
        if (s.indexOf('.') < 0) return s;
        int end = s.length();
        while (s.charAt(end - 1) == '0') end--;
        if (s.charAt(end - 1) == '.') end--;
        return s.substring(0, end);
    }
}
