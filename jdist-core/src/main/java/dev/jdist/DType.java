package dev.jdist;

/**
 * The 14 MLX element types, in MLX's enum order ({@link #code()}), with their item sizes.
 * Every element is stored and sent little-endian, whatever the JVM's native order.
 */
public enum DType {
    BOOL(0, 1, "bool"),
    UINT8(1, 1, "uint8"),
    UINT16(2, 2, "uint16"),
    UINT32(3, 4, "uint32"),
    UINT64(4, 8, "uint64"),
    INT8(5, 1, "int8"),
    INT16(6, 2, "int16"),
    INT32(7, 4, "int32"),
    INT64(8, 8, "int64"),
    FLOAT16(9, 2, "float16"),
    FLOAT32(10, 4, "float32"),
    FLOAT64(11, 8, "float64"),
    BFLOAT16(12, 2, "bfloat16"),
    COMPLEX64(13, 8, "complex64");

    private final int code;
    private final int itemSize;
    private final String mlxName;

    DType(int code, int itemSize, String mlxName) {
        this.code = code;
        this.itemSize = itemSize;
        this.mlxName = mlxName;
    }

    /** MLX's internal enum value (useful in logs and native tables). */
    public int code() { return code; }

    /** Bytes per element. */
    public int itemSize() { return itemSize; }

    /** The name MLX prints, e.g. {@code float32}. */
    public String mlxName() { return mlxName; }

    public boolean isFloatingPoint() {
        return this == FLOAT16 || this == FLOAT32 || this == FLOAT64 || this == BFLOAT16;
    }

    public boolean isUnsigned() {
        return this == UINT8 || this == UINT16 || this == UINT32 || this == UINT64;
    }

    public boolean isInteger() {
        return !isFloatingPoint() && this != BOOL && this != COMPLEX64;
    }

    /** Looks a dtype up by its MLX name ({@code "float32"}); IllegalArgumentException listing the valid names otherwise. */
    public static DType fromMlxName(String name) {
        for (DType t : values()) {
            if (t.mlxName.equals(name)) return t;
        }
        StringBuilder valid = new StringBuilder();
        for (DType t : values()) valid.append(valid.isEmpty() ? "" : ", ").append(t.mlxName);
        throw new IllegalArgumentException("unknown dtype '" + name + "'; valid dtypes: " + valid);
    }

    @Override
    public String toString() { return mlxName; }
}
