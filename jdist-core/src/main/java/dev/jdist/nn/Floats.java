package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/** Copies between float32 {@link Array}s and heap {@code float[]}s, the form the matrix kernels work on. */
final class Floats {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Floats() {}

    /** The elements of a float32 array, row-major. */
    static float[] read(Array a, String what) {
        requireFloat32(a, what);
        float[] out = new float[Math.toIntExact(a.size())];
        MemorySegment.copy(a.segment(), F32, 0, out, 0, out.length);
        return out;
    }

    /** A new float32 array holding {@code values}. */
    static Array array(float[] values, int... shape) {
        return Array.fromFloats(values, shape);
    }

    static void requireFloat32(Array a, String what) {
        if (a.dtype() != DType.FLOAT32) {
            throw new IllegalArgumentException(what + " must be float32 but is " + a.dtype() + " with shape "
                    + Arrays.toString(a.shape()) + "; convert it to float32 first");
        }
    }

    /** Rows of a {@code [..., features]} array: the product of the leading dimensions. */
    static int rows(Array x, int features, String what) {
        if (x.ndim() == 0 || x.shape(x.ndim() - 1) != features) {
            throw new IllegalArgumentException(what + " must have shape [..., " + features + "] but has shape "
                    + Arrays.toString(x.shape()));
        }
        return Math.toIntExact(x.size() / Math.max(features, 1));
    }

    /** The shape of {@code x} with its last dimension replaced. */
    static int[] withLastDim(Array x, int last) {
        int[] s = x.shape();
        s[s.length - 1] = last;
        return s;
    }
}
