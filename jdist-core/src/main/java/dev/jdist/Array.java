package dev.jdist;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * An n-dimensional array: a dtype, a row-major shape and a contiguous little-endian byte image in a
 * native {@link MemorySegment}. Collectives read and write that segment directly (zero copy).
 *
 * <p>Arrays made by the factories live in automatically managed memory ({@link Arena#ofAuto()});
 * {@link #wrap} views memory the caller owns.
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
        long bytes = elementCount(shape) * dtype.itemSize();
        return new Array(dtype, shape, Arena.ofAuto().allocate(Math.max(bytes, 0), 16).asSlice(0, bytes));
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

    /** Copies raw little-endian element bytes (MLX's element encoding) into a new array. */
    public static Array fromBytes(DType dtype, byte[] littleEndian, int... shape) {
        Array a = zeros(dtype, shape);
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
        Array a = zeros(DType.FLOAT32, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, F32, 0, values.length);
        return a;
    }

    public static Array fromDoubles(double[] values, int... shape) {
        Array a = zeros(DType.FLOAT64, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, F64, 0, values.length);
        return a;
    }

    public static Array fromInts(int[] values, int... shape) {
        Array a = zeros(DType.INT32, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, I32, 0, values.length);
        return a;
    }

    public static Array fromLongs(long[] values, int... shape) {
        Array a = zeros(DType.INT64, shape);
        checkLength(values.length, a);
        MemorySegment.copy(values, 0, a.data, I64, 0, values.length);
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

    public int shape(int axis) { return shape[axis]; }

    public int ndim() { return shape.length; }

    /** Number of elements. */
    public long size() { return size; }

    /** Number of bytes of the element image. */
    public long nbytes() { return data.byteSize(); }

    /** The native little-endian element image; collectives read and write it directly. */
    public MemorySegment segment() { return data; }

    /** A view with another shape of the same element count; shares the data. */
    public Array reshape(int... newShape) {
        if (elementCount(newShape) != size) {
            throw new IllegalArgumentException("cannot reshape " + Arrays.toString(shape) + " (" + size
                    + " elements) to " + Arrays.toString(newShape));
        }
        return new Array(dtype, newShape, data);
    }

    /** A deep copy in fresh memory. */
    public Array copy() {
        Array c = zeros(dtype, shape);
        MemorySegment.copy(data, 0, c.data, 0, data.byteSize());
        return c;
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
            case FLOAT16 -> data.set(I16, off, Float.floatToFloat16((float) v));
            case BFLOAT16 -> data.set(I16, off, floatToBfloat16((float) v));
            case FLOAT32 -> data.set(F32, off, (float) v);
            case COMPLEX64 -> { data.set(F32, off, (float) v); data.set(F32, off + 4, 0f); }
            case FLOAT64 -> data.set(F64, off, v);
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
