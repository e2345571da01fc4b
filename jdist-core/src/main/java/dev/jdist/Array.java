package dev.jdist;

import dev.jdist.memory.ArrayMemory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * An n-dimensional array: a dtype, a row-major shape and a contiguous little-endian byte image in a
 * native {@link MemorySegment}. Collectives read and write that segment directly (zero copy).
 *
 * <p>Arrays made by the factories live in automatically managed native memory: it is released (or,
 * from 1 MiB up, returned to jdist's array cache for reuse) once neither the array nor any segment
 * derived from it is reachable. See "Array memory" in the README. {@link #wrap} views memory the
 * caller owns.
 */
public final class Array {

    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final DType dtype;
    private final int[] shape;
    private final long size;
    private final MemorySegment data;

    private Array(DType dtype, int[] shape, MemorySegment data) {
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.shape = shape.clone();
        this.size = elementCount(this.shape);
        this.data = data;
        if (data.byteSize() != size * dtype.itemSize()) {
            throw new IllegalArgumentException("segment holds " + data.byteSize() + " bytes but shape "
                    + Arrays.toString(shape) + " of " + dtype + " needs " + size * dtype.itemSize());
        }
    }

    // ---------------------------------------------------------------- factories

    /** A new zero-filled array. */
    public static Array zeros(DType dtype, int... shape) {
        // 64-byte alignment (ArrayMemory): whole cache lines and vector-friendly for the reduction kernels.
        return new Array(dtype, shape, ArrayMemory.shared().allocate(byteCount(dtype, shape), true));
    }

    /**
     * Internal: a new array whose contents are unspecified, for outputs the caller overwrites
     * completely (collective outputs, copies). Skips the zero fill of a reused cache block.
     */
    static Array uninitialized(DType dtype, int... shape) {
        return new Array(dtype, shape, ArrayMemory.shared().allocate(byteCount(dtype, shape), false));
    }

    private static long byteCount(DType dtype, int[] shape) {
        return Math.multiplyExact(elementCount(shape), (long) dtype.itemSize());
    }

    /** A new array whose every element is one. */
    public static Array ones(DType dtype, int... shape) {
        return full(dtype, 1.0, shape);
    }

    /** A new array whose every element is {@code value} converted to {@code dtype} (complex: real part). */
    public static Array full(DType dtype, double value, int... shape) {
        Array a = zeros(dtype, shape);
        for (long i = 0; i < a.size; i++) a.setDouble(i, value);
        return a;
    }

    /** A new array with the same dtype and shape as {@code like}, zero-filled. */
    public static Array zerosLike(Array like) {
        return zeros(like.dtype, like.shape);
    }

    /** A 0-d array holding {@code value} converted to {@code dtype}. */
    public static Array scalar(DType dtype, double value) {
        return full(dtype, value);
    }

    /** A 1-d array {@code [0, 1, ..., n-1]} converted to {@code dtype} (bool: 0 is false, the rest true). */
    public static Array arange(DType dtype, int n) {
        Array a = zeros(dtype, n);
        for (int i = 0; i < n; i++) a.setLong(i, i);
        return a;
    }

    /** Copies raw little-endian element bytes (MLX's element encoding) into a new array. */
    public static Array fromBytes(DType dtype, byte[] littleEndian, int... shape) {
        Array a = uninitialized(dtype, shape);
        if (littleEndian.length != a.nbytes()) {
            throw new IllegalArgumentException("got " + littleEndian.length + " bytes but shape "
                    + Arrays.toString(shape) + " of " + dtype + " needs " + a.nbytes());
        }
        MemorySegment.copy(MemorySegment.ofArray(littleEndian), 0, a.data, 0, littleEndian.length);
        return a;
    }

    /** A view over memory the caller owns; no copy. The segment must hold exactly the array's bytes. */
    public static Array wrap(MemorySegment segment, DType dtype, int... shape) {
        return new Array(dtype, shape, segment);
    }

    /** A 1-d float32 array. */
    public static Array of(float... values) { return fromFloats(values, values.length); }

    /** A 1-d float64 array. */
    public static Array of(double... values) { return fromDoubles(values, values.length); }

    /** A 1-d int32 array. */
    public static Array of(int... values) { return fromInts(values, values.length); }

    /** A 1-d int64 array. */
    public static Array of(long... values) { return fromLongs(values, values.length); }

    /** A 1-d bool array. */
    public static Array of(boolean... values) {
        Array a = zeros(DType.BOOL, values.length);
        for (int i = 0; i < values.length; i++) a.data.set(ValueLayout.JAVA_BYTE, i, (byte) (values[i] ? 1 : 0));
        return a;
    }

    public static Array fromFloats(float[] values, int... shape) {
        Array a = uninitialized(DType.FLOAT32, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, F32, 0, values.length);
        return a;
    }

    public static Array fromDoubles(double[] values, int... shape) {
        Array a = uninitialized(DType.FLOAT64, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, F64, 0, values.length);
        return a;
    }

    public static Array fromInts(int[] values, int... shape) {
        Array a = uninitialized(DType.INT32, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, I32, 0, values.length);
        return a;
    }

    public static Array fromLongs(long[] values, int... shape) {
        Array a = uninitialized(DType.INT64, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, I64, 0, values.length);
        return a;
    }

    /** A bool array of {@code shape}. */
    public static Array fromBooleans(boolean[] values, int... shape) {
        Array a = zeros(DType.BOOL, shape);
        checkLength(values.length, a);
        for (int i = 0; i < values.length; i++) a.data.set(ValueLayout.JAVA_BYTE, i, (byte) (values[i] ? 1 : 0));
        return a;
    }

    /**
     * Raw 16-bit element images: {@code int16}, {@code uint16}, {@code float16} or {@code bfloat16}
     * bit patterns, stored unchanged.
     */
    public static Array fromShortBits(DType dtype, short[] bits, int... shape) {
        if (dtype.itemSize() != 2) {
            throw new IllegalArgumentException("fromShortBits needs a 2-byte dtype (int16, uint16, float16, bfloat16), got " + dtype);
        }
        Array a = uninitialized(dtype, shape);
        checkLength(bits.length, a);
        MemorySegment.copy(bits, 0, a.data, I16, 0, bits.length);
        return a;
    }

    /** A complex64 array from interleaved (real, imaginary) pairs. */
    public static Array fromComplex(float[] interleaved, int... shape) {
        Array a = uninitialized(DType.COMPLEX64, shape);
        if (interleaved.length != 2 * a.size) {
            throw new IllegalArgumentException(interleaved.length + " floats do not fill complex64 shape "
                    + Arrays.toString(shape) + " (needs 2 per element: " + 2 * a.size + ")");
        }
        MemorySegment.copy(interleaved, 0, a.data, F32, 0, interleaved.length);
        return a;
    }

    /** Converts {@code values} exactly where the dtype can hold them (integers wrap to the dtype's width). */
    public static Array fromLongs(DType dtype, long[] values, int... shape) {
        Array a = zeros(dtype, shape);
        checkLength(values.length, a);
        for (int i = 0; i < values.length; i++) a.setLong(i, values[i]);
        return a;
    }

    /** As {@link #fromLongs(DType, long[], int...)}. */
    public static Array fromInts(DType dtype, int[] values, int... shape) {
        Array a = zeros(dtype, shape);
        checkLength(values.length, a);
        for (int i = 0; i < values.length; i++) a.setLong(i, values[i]);
        return a;
    }

    /** Converts {@code values} to any dtype (complex64: real parts, imaginary zero). */
    public static Array fromDoubles(DType dtype, double[] values, int... shape) {
        Array a = zeros(dtype, shape);
        checkLength(values.length, a);
        for (int i = 0; i < values.length; i++) a.setDouble(i, values[i]);
        return a;
    }

    // ---------------------------------------------------------------- accessors

    public DType dtype() { return dtype; }

    public int[] shape() { return shape.clone(); }

    /** The shape itself, not a copy, for jdist's own records on the hot path: never modify it. */
    int[] shapeView() { return shape; }

    public int shape(int axis) { return shape[axis]; }

    public int ndim() { return shape.length; }

    /** Number of elements. */
    public long size() { return size; }

    /** Number of bytes of the element image. */
    public long nbytes() { return data.byteSize(); }

    /** The native little-endian element image; collectives read and write it directly. */
    public MemorySegment segment() { return data; }

    /**
     * A view with another shape of the same element count; shares the data. One dimension may be
     * {@code -1}: it is inferred, as in MLX.
     */
    public Array reshape(int... newShape) {
        newShape = inferDimension(newShape);
        if (elementCount(newShape) != size) {
            throw new IllegalArgumentException("cannot reshape " + Arrays.toString(shape) + " (" + size
                    + " elements) to " + Arrays.toString(newShape));
        }
        return new Array(dtype, newShape, data);
    }

    /** A deep copy in fresh memory. */
    public Array copy() {
        Array c = uninitialized(dtype, shape);
        MemorySegment.copy(data, 0, c.data, 0, data.byteSize());
        return c;
    }

    /**
     * A converted copy, element by element: integers and bool convert exactly where the target can
     * hold the value (integers wrap to the target's width), floats to integers truncate toward
     * zero, anything to bool is "non-zero", floats round to nearest even, complex64 to real keeps
     * the real part.
     */
    public Array astype(DType target) {
        if (target == dtype) return copy();
        Array out = zeros(target, shape);
        boolean exactInteger = dtype.isInteger() || dtype == DType.BOOL;
        for (long i = 0; i < size; i++) {
            if (target == DType.COMPLEX64 && dtype != DType.COMPLEX64) {
                out.setComplex(i, exactInteger ? toFloatExactly(i) : (float) getDouble(i), 0f);
            } else if (dtype == DType.COMPLEX64 && target == DType.BOOL) {
                out.setDouble(i, getDouble(i) != 0 || getImag(i) != 0 ? 1 : 0);
            } else if (exactInteger) {
                if (target.isFloatingPoint()) out.setIntegerAsFloat(i, getLong(i), dtype == DType.UINT64);
                else out.setLong(i, getLong(i));
            } else {
                out.setDouble(i, getDouble(i));
            }
        }
        return out;
    }

    private float toFloatExactly(long i) {
        long v = getLong(i);
        return dtype == DType.UINT64 && v < 0 ? (float) unsignedToDouble(v) : (float) v;
    }

    /** Integer to float dtype without going through a double first (int64 to float32 rounds once). */
    private void setIntegerAsFloat(long i, long v, boolean unsigned) {
        if (unsigned && v < 0) {
            setDouble(i, unsignedToDouble(v));
        } else if (dtype == DType.FLOAT32) {
            data.set(F32, i * 4, (float) v);
        } else if (dtype == DType.FLOAT64) {
            data.set(F64, i * 8, (double) v);
        } else {
            setDouble(i, v);
        }
    }

    /** The raw little-endian element bytes. */
    public byte[] toBytes() { return data.toArray(ValueLayout.JAVA_BYTE); }

    public float[] toFloatArray() {
        float[] out = new float[Math.toIntExact(size)];
        for (int i = 0; i < out.length; i++) out[i] = (float) getDouble(i);
        return out;
    }

    public double[] toDoubleArray() {
        double[] out = new double[Math.toIntExact(size)];
        for (int i = 0; i < out.length; i++) out[i] = getDouble(i);
        return out;
    }

    public int[] toIntArray() {
        int[] out = new int[Math.toIntExact(size)];
        for (int i = 0; i < out.length; i++) out[i] = (int) getLong(i);
        return out;
    }

    public boolean[] toBooleanArray() {
        boolean[] out = new boolean[Math.toIntExact(size)];
        for (int i = 0; i < out.length; i++) out[i] = dtype == DType.COMPLEX64 ? getDouble(i) != 0 || getImag(i) != 0 : getDouble(i) != 0;
        return out;
    }

    /** The raw 16-bit element images of a 2-byte dtype. */
    public short[] toShortBits() {
        if (dtype.itemSize() != 2) throw new IllegalStateException("toShortBits on a " + dtype + " array; it needs a 2-byte dtype");
        return data.toArray(I16);
    }

    /** Interleaved (real, imaginary) pairs of a complex64 array. */
    public float[] toComplexArray() {
        if (dtype != DType.COMPLEX64) throw new IllegalStateException("toComplexArray on a " + dtype + " array; it needs complex64");
        return data.toArray(F32);
    }

    public long[] toLongArray() {
        long[] out = new long[Math.toIntExact(size)];
        for (int i = 0; i < out.length; i++) out[i] = getLong(i);
        return out;
    }

    /** Element {@code i} (flat, row-major) as a double; complex64 gives its real part, uint64 its unsigned value. */
    public double getDouble(long i) {
        long off = i * dtype.itemSize();
        return switch (dtype) {
            case BOOL -> data.get(ValueLayout.JAVA_BYTE, off) != 0 ? 1 : 0;
            case UINT8 -> Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, off));
            case INT8 -> data.get(ValueLayout.JAVA_BYTE, off);
            case UINT16 -> Short.toUnsignedInt(data.get(I16, off));
            case INT16 -> data.get(I16, off);
            case UINT32 -> Integer.toUnsignedLong(data.get(I32, off));
            case INT32 -> data.get(I32, off);
            case UINT64 -> unsignedToDouble(data.get(I64, off));
            case INT64 -> data.get(I64, off);
            case FLOAT16 -> Float.float16ToFloat(data.get(I16, off));
            case BFLOAT16 -> Float.intBitsToFloat(data.get(I16, off) << 16);
            case FLOAT32, COMPLEX64 -> data.get(F32, off);
            case FLOAT64 -> data.get(F64, off);
        };
    }

    /** Element {@code i} as a long (integers exactly, floats truncated, bool 0/1). */
    public long getLong(long i) {
        long off = i * dtype.itemSize();
        return switch (dtype) {
            case UINT8 -> Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, off));
            case INT8 -> data.get(ValueLayout.JAVA_BYTE, off);
            case UINT16 -> Short.toUnsignedInt(data.get(I16, off));
            case INT16 -> data.get(I16, off);
            case UINT32 -> Integer.toUnsignedLong(data.get(I32, off));
            case INT32 -> data.get(I32, off);
            case UINT64, INT64 -> data.get(I64, off);
            default -> (long) getDouble(i);
        };
    }

    /** Imaginary part of complex64 element {@code i}; 0 for every other dtype. */
    public float getImag(long i) {
        return dtype == DType.COMPLEX64 ? data.get(F32, i * 8 + 4) : 0f;
    }

    /** Sets element {@code i} from a double, converting to the dtype (floats round to nearest even). */
    public void setDouble(long i, double v) {
        long off = i * dtype.itemSize();
        switch (dtype) {
            case BOOL -> data.set(ValueLayout.JAVA_BYTE, off, (byte) (v != 0 ? 1 : 0));
            case UINT8, INT8 -> data.set(ValueLayout.JAVA_BYTE, off, (byte) (long) v);
            case UINT16, INT16 -> data.set(I16, off, (short) (long) v);
            case UINT32, INT32 -> data.set(I32, off, (int) (long) v);
            case INT64 -> data.set(I64, off, (long) v);
            case UINT64 -> data.set(I64, off, doubleToUnsigned(v));
            case FLOAT16 -> data.set(I16, off, Float.floatToFloat16(toFloatRoundToOdd(v)));
            case BFLOAT16 -> data.set(I16, off, floatToBfloat16(toFloatRoundToOdd(v)));
            case FLOAT32 -> data.set(F32, off, (float) v);
            case COMPLEX64 -> { data.set(F32, off, (float) v); data.set(F32, off + 4, 0f); }
            case FLOAT64 -> data.set(F64, off, v);
        }
    }

    /** Sets element {@code i} from an integer: integer dtypes wrap to their width, bool is non-zero, floats round. */
    public void setLong(long i, long v) {
        long off = i * dtype.itemSize();
        switch (dtype) {
            case BOOL -> data.set(ValueLayout.JAVA_BYTE, off, (byte) (v != 0 ? 1 : 0));
            case UINT8, INT8 -> data.set(ValueLayout.JAVA_BYTE, off, (byte) v);
            case UINT16, INT16 -> data.set(I16, off, (short) v);
            case UINT32, INT32 -> data.set(I32, off, (int) v);
            case UINT64, INT64 -> data.set(I64, off, v);
            case FLOAT32 -> data.set(F32, off, (float) v);
            default -> setDouble(i, v);
        }
    }

    /** Sets complex64 element {@code i}. */
    public void setComplex(long i, float re, float im) {
        if (dtype != DType.COMPLEX64) throw new IllegalStateException("setComplex on a " + dtype + " array");
        data.set(F32, i * 8, re);
        data.set(F32, i * 8 + 4, im);
    }

    // ---------------------------------------------------------------- helpers

    /** Rounds a float to bfloat16 (upper 16 bits) with round-to-nearest-even; NaN stays NaN. */
    public static short floatToBfloat16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) return (short) ((bits >>> 16) | 0x0040);
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    /**
     * double to float rounding to odd: rounding that result again to a narrower format (half,
     * bfloat16) then equals rounding {@code v} directly to nearest even (no double rounding).
     */
    static float toFloatRoundToOdd(double v) {
        float f = (float) v;
        if (Float.isFinite(f) && (double) f != v) {
            int bits = Float.floatToRawIntBits(f);
            if (Math.abs((double) f) > Math.abs(v)) bits -= 1; // truncate toward zero
            f = Float.intBitsToFloat(bits | 1);
        }
        return f;
    }

    /** float16 bits to float (exact). */
    public static float float16ToFloat(short bits) { return Float.float16ToFloat(bits); }

    /** float to float16 bits, round to nearest even. */
    public static short floatToFloat16(float f) { return Float.floatToFloat16(f); }

    /** bfloat16 bits to float (exact). */
    public static float bfloat16ToFloat(short bits) { return Float.intBitsToFloat(bits << 16); }

    /** Same dtype, same shape, same bytes (so NaNs with equal bits are equal; +0 and -0 are not). */
    public static boolean arrayEquals(Array a, Array b) {
        return a.dtype == b.dtype && Arrays.equals(a.shape, b.shape)
                && MemorySegment.mismatch(a.data, 0, a.data.byteSize(), b.data, 0, b.data.byteSize()) < 0;
    }

    private int[] inferDimension(int[] newShape) {
        int unknown = -1;
        long known = 1;
        for (int i = 0; i < newShape.length; i++) {
            if (newShape[i] == -1) {
                if (unknown >= 0) throw new IllegalArgumentException("reshape to " + Arrays.toString(newShape) + ": at most one dimension may be -1");
                unknown = i;
            } else if (newShape[i] < 0) {
                throw new IllegalArgumentException("reshape to " + Arrays.toString(newShape) + ": negative dimension " + newShape[i]);
            } else {
                known *= newShape[i];
            }
        }
        if (unknown < 0) return newShape;
        if (known == 0 || size % known != 0) {
            throw new IllegalArgumentException("cannot reshape " + Arrays.toString(shape) + " (" + size + " elements) to "
                    + Arrays.toString(newShape) + ": the -1 dimension cannot be inferred");
        }
        int[] out = newShape.clone();
        out[unknown] = Math.toIntExact(size / known);
        return out;
    }

    static long elementCount(int[] shape) {
        long n = 1;
        for (int d : shape) {
            if (d < 0) throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    private static void checkLength(int length, Array a) {
        if (length != a.size) {
            throw new IllegalArgumentException(length + " values do not fill shape " + Arrays.toString(a.shape)
                    + " (" + a.size + " elements)");
        }
    }

    private static double unsignedToDouble(long v) {
        return v >= 0 ? v : (double) (v >>> 1) * 2.0 + (v & 1);
    }

    private static long doubleToUnsigned(double v) {
        if (v < 9.223372036854775807E18) return (long) v;
        return (long) (v - 9.223372036854775807E18) + Long.MIN_VALUE;
    }

    @Override
    public String toString() {
        return ArrayFormat.format(this);
    }
}
