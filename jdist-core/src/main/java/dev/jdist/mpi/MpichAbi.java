package dev.jdist.mpi;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.ValueLayout;

/**
 * MPICH's handle ABI (shared by MPICH 3/4, Intel MPI, MVAPICH and the other members of the MPICH ABI
 * initiative, {@code libmpi.so.12}): handles are {@code int} constants from MPICH's {@code mpi.h}.
 */
record MpichAbi() implements MpiAbi {
    // Values from MPICH 4.0's mpi.h (stable across the MPICH ABI family).
    static final int MPI_COMM_WORLD = 0x44000000;
    static final int MPI_ERRORS_RETURN = 0x54000001;
    static final int MPI_MAX = 0x58000001;
    static final int MPI_MIN = 0x58000002;
    static final int MPI_SUM = 0x58000003;
    static final int MPI_FLOAT = 0x4c00040a;
    static final int MPI_DOUBLE = 0x4c00080b;
    static final int MPI_INT8_T = 0x4c000137;
    static final int MPI_INT16_T = 0x4c000238;
    static final int MPI_INT32_T = 0x4c000439;
    static final int MPI_INT64_T = 0x4c00083a;
    static final int MPI_UINT8_T = 0x4c00013b;
    static final int MPI_UINT16_T = 0x4c00023c;
    static final int MPI_UINT32_T = 0x4c00043d;
    static final int MPI_UINT64_T = 0x4c00083e;
    static final int MPI_C_BOOL = 0x4c00013f;
    static final int MPI_C_FLOAT_COMPLEX = 0x4c000840;

    @Override public String family() { return "MPICH"; }

    @Override public ValueLayout handleLayout() { return ValueLayout.JAVA_INT; }

    @Override public long commWorld() { return MPI_COMM_WORLD; }

    @Override public long errorsReturn() { return MPI_ERRORS_RETURN; }

    @Override public long uint8() { return MPI_UINT8_T; }

    @Override
    public long datatype(DType t) {
        return switch (t) {
            case BOOL -> MPI_C_BOOL;
            case UINT8 -> MPI_UINT8_T;
            case UINT16 -> MPI_UINT16_T;
            case UINT32 -> MPI_UINT32_T;
            case UINT64 -> MPI_UINT64_T;
            case INT8 -> MPI_INT8_T;
            case INT16 -> MPI_INT16_T;
            case INT32 -> MPI_INT32_T;
            case INT64 -> MPI_INT64_T;
            case FLOAT32 -> MPI_FLOAT;
            case FLOAT64 -> MPI_DOUBLE;
            case COMPLEX64 -> MPI_C_FLOAT_COMPLEX;
            case FLOAT16, BFLOAT16 -> throw new IllegalArgumentException(t + " has no predefined MPI datatype");
        };
    }

    @Override
    public long op(ReduceOp op) {
        return switch (op) {
            case SUM -> MPI_SUM;
            case MAX -> MPI_MAX;
            case MIN -> MPI_MIN;
        };
    }

    /** {@code (void *) -1}. */
    @Override public long inPlace() { return -1L; }

    /** {@code {int count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR}}: 20 bytes. */
    @Override public int statusSize() { return 32; }
}
