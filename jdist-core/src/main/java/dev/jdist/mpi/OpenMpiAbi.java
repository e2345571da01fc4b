package dev.jdist.mpi;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.util.EnumMap;
import java.util.Map;

/**
 * Open MPI's handle ABI (4.x and 5.x, {@code libmpi.so.40}): a handle is the address of an exported
 * global object, e.g. {@code MPI_COMM_WORLD == &ompi_mpi_comm_world}.
 */
final class OpenMpiAbi implements MpiAbi {
    private final long commWorld;
    private final long errorsReturn;
    private final Map<DType, Long> types = new EnumMap<>(DType.class);
    private final Map<ReduceOp, Long> ops = new EnumMap<>(ReduceOp.class);

    /** Resolves every global jdist uses; a missing one is an {@link MpiLoadException} naming it. */
    OpenMpiAbi(SymbolLookup lib, String libraryName) {
        commWorld = address(lib, libraryName, "ompi_mpi_comm_world");
        errorsReturn = address(lib, libraryName, "ompi_mpi_errors_return");
        types.put(DType.BOOL, address(lib, libraryName, "ompi_mpi_c_bool"));
        types.put(DType.INT8, address(lib, libraryName, "ompi_mpi_int8_t"));
        types.put(DType.UINT8, address(lib, libraryName, "ompi_mpi_uint8_t"));
        types.put(DType.INT16, address(lib, libraryName, "ompi_mpi_int16_t"));
        types.put(DType.UINT16, address(lib, libraryName, "ompi_mpi_uint16_t"));
        types.put(DType.INT32, address(lib, libraryName, "ompi_mpi_int32_t"));
        types.put(DType.UINT32, address(lib, libraryName, "ompi_mpi_uint32_t"));
        types.put(DType.INT64, address(lib, libraryName, "ompi_mpi_int64_t"));
        types.put(DType.UINT64, address(lib, libraryName, "ompi_mpi_uint64_t"));
        types.put(DType.FLOAT32, address(lib, libraryName, "ompi_mpi_float"));
        types.put(DType.FLOAT64, address(lib, libraryName, "ompi_mpi_double"));
        // mpi.h: #define MPI_C_FLOAT_COMPLEX (and MPI_C_COMPLEX) &ompi_mpi_c_float_complex; MLX uses ompi_mpi_c_complex.
        types.put(DType.COMPLEX64, lib.find("ompi_mpi_c_float_complex")
                .map(s -> s.address()).orElseGet(() -> address(lib, libraryName, "ompi_mpi_c_complex")));
        ops.put(ReduceOp.SUM, address(lib, libraryName, "ompi_mpi_op_sum"));
        ops.put(ReduceOp.MAX, address(lib, libraryName, "ompi_mpi_op_max"));
        ops.put(ReduceOp.MIN, address(lib, libraryName, "ompi_mpi_op_min"));
    }

    private static long address(SymbolLookup lib, String libraryName, String symbol) {
        return lib.find(symbol).orElseThrow(() -> new MpiLoadException(libraryName
                + " looks like Open MPI but does not export " + symbol + "; is it a complete Open MPI 4 or 5 installation?"))
                .address();
    }

    @Override public String family() { return "Open MPI"; }

    @Override public ValueLayout handleLayout() { return ValueLayout.ADDRESS; }

    @Override public long commWorld() { return commWorld; }

    @Override public long errorsReturn() { return errorsReturn; }

    @Override public boolean smallIntegerSumSaturates() { return true; }

    @Override public long uint8() { return types.get(DType.UINT8); }

    @Override
    public long datatype(DType t) {
        Long h = types.get(t);
        if (h == null) throw new IllegalArgumentException(t + " has no predefined MPI datatype");
        return h;
    }

    @Override public long op(ReduceOp op) { return ops.get(op); }

    /** {@code (void *) 1}. */
    @Override public long inPlace() { return 1L; }

    /** {@code {int MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled; size_t _ucount}}: 24 bytes on LP64. */
    @Override public int statusSize() { return 32; }
}
