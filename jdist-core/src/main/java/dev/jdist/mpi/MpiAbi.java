package dev.jdist.mpi;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The handle ABI of one MPI implementation family: how {@code MPI_Comm}, {@code MPI_Datatype},
 * {@code MPI_Op} and {@code MPI_Errhandler} values look and what the predefined ones are.
 *
 * <p>Java code carries every handle as a {@code long}; {@link MpiLibrary} converts it to the C type
 * ({@link #handleLayout()}) at each call. Open MPI's handles are addresses of exported globals
 * ({@code &ompi_mpi_comm_world}); MPICH's (and the MPICH-ABI family's) are {@code int} constants.
 */
sealed interface MpiAbi permits OpenMpiAbi, MpichAbi {

    /** "Open MPI" or "MPICH", for messages. */
    String family();

    /** The C layout of a handle: {@code ADDRESS} (Open MPI) or {@code JAVA_INT} (MPICH). */
    ValueLayout handleLayout();

    long commWorld();

    long errorsReturn();

    /** The predefined datatype for {@code t}; float16 and bfloat16 have none (jdist makes 2-byte types). */
    long datatype(DType t);

    /** {@code MPI_UINT8_T}, the base of the 2-byte types. */
    long uint8();

    /** The predefined {@code MPI_SUM} / {@code MPI_MAX} / {@code MPI_MIN}. */
    long op(ReduceOp op);

    /** The address that means {@code MPI_IN_PLACE}. */
    long inPlace();

    /**
     * Whether the predefined {@code MPI_SUM} may saturate instead of wrap for 8- and 16-bit integers.
     * Open MPI 4.1's {@code op/avx} component uses saturating vector adds (open-mpi/ompi#8045, closed
     * "wontfix": overflow is undefined for MPI), seen with Debian's 4.1.4 on AVX-512 machines; jdist
     * then reduces those dtypes with its own user op, which wraps as docs/reference/collectives.md §1.3 requires.
     */
    default boolean smallIntegerSumSaturates() { return false; }

    /** {@code MPI_THREAD_MULTIPLE}. */
    default int threadMultiple() { return 3; }

    /** Bytes of an {@code MPI_Status} (rounded up; jdist allocates at least this many). */
    int statusSize();

    /** Reads a handle an MPI call wrote to {@code at}. */
    default long readHandle(MemorySegment at) {
        return handleLayout() instanceof ValueLayout.OfInt i ? at.get(i, 0) : at.get(ValueLayout.ADDRESS, 0).address();
    }

    /** Writes {@code handle} to {@code at}, as MPI reads an {@code MPI_Comm*} argument. */
    default void writeHandle(MemorySegment at, long handle) {
        if (handleLayout() instanceof ValueLayout.OfInt i) {
            at.set(i, 0, (int) handle);
        } else {
            at.set(ValueLayout.ADDRESS, 0, MemorySegment.ofAddress(handle));
        }
    }
}
