package dev.jdist;

/** MLX-style printing of arrays: {@code array([4, 4, 4, ..., 4, 4, 4], dtype=float32)}. */
final class ArrayFormat {
    private ArrayFormat() {}

    static String format(Array a) {
        // Placeholder kept minimal; see the core issue for the full MLX formatting rules.
        StringBuilder sb = new StringBuilder("array(");
        if (a.ndim() == 0) {
            sb.append(element(a, 0));
        } else {
            sb.append('[');
            long n = a.size();
            for (long i = 0; i < n; i++) {
                if (n > 6 && i == 3) { sb.append("..., "); i = n - 3; }
                sb.append(element(a, i));
                if (i < n - 1) sb.append(", ");
            }
            sb.append(']');
        }
        return sb.append(", dtype=").append(a.dtype().mlxName()).append(')').toString();
    }

    private static String element(Array a, long i) {
        return switch (a.dtype()) {
            case BOOL -> a.getLong(i) != 0 ? "true" : "false";
            case FLOAT16, FLOAT32, FLOAT64, BFLOAT16 -> {
                double v = a.getDouble(i);
                yield v == Math.rint(v) && Math.abs(v) < 1e16 ? Long.toString((long) v) : Float.toString((float) v);
            }
            case COMPLEX64 -> a.getDouble(i) + "+" + a.getImag(i) + "j";
            case UINT64 -> Long.toUnsignedString(a.getLong(i));
            default -> Long.toString(a.getLong(i));
        };
    }
}
