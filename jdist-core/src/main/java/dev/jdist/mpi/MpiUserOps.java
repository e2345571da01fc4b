package dev.jdist.mpi;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Reducer;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.atomic.AtomicReference;

/**
 * User-defined MPI reductions ({@code MPI_Op_create}) for what MPI has no predefined op for:
 * float16 and bfloat16, complex64 max/min, bool (docs/reference/collectives.md §1.3: sum/max = OR, min = AND), and the
 * integer cases where libraries are known to be wrong (see {@link #needsUserOp}).
 *
 * <p>MPI calls {@code void fn(void *in, void *inout, int *len, MPI_Datatype *type)}, which runs
 * {@code inout[i] = op(inout[i], in[i])} through {@link Reducer#reduce}. The upcall catches every
 * {@link Throwable} (an exception escaping an upcall would end the JVM) and parks it in
 * {@link #takeFailure()}, which the caller of the MPI function checks afterwards. The stubs live in
 * the global arena: MPI may hold the function pointers until the process ends.
 */
final class MpiUserOps {
    private static final AtomicReference<Throwable> FAILURE = new AtomicReference<>();
    private static final MethodHandle APPLY;
    private static final FunctionDescriptor FN = FunctionDescriptor.ofVoid(
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS);

    static {
        try {
            APPLY = MethodHandles.lookup().findStatic(MpiUserOps.class, "apply", MethodType.methodType(void.class,
                    ReduceOp.class, DType.class, MemorySegment.class, MemorySegment.class, MemorySegment.class, MemorySegment.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private MpiUserOps() {}

    /**
     * Whether {@code (dtype, op)} needs a user-defined op: MPI predefines none for float16/bfloat16,
     * none for max/min of complex, and none for sum/max/min of {@code MPI_C_BOOL} (only logical ops).
     * Two more cases work around library defects that break docs/reference/collectives.md §1.3:
     * <ul>
     *   <li>max/min of unsigned integers: MPICH 4.x compares them as signed (pmodels/mpich#6083, seen
     *       with Debian 12's MPICH 4.0.2; again in #7507 for 64-bit), and Open MPI 4.1.2+ had the same
     *       kind of regression (open-mpi/ompi#10525, #10276), so jdist never trusts the library here;</li>
     *   <li>with {@code smallIntSumSaturates} (Open MPI, {@link MpiAbi#smallIntegerSumSaturates()}),
     *       8- and 16-bit integer sums, which must wrap.</li>
     * </ul>
     */
    static boolean needsUserOp(DType dtype, ReduceOp op, boolean smallIntSumSaturates) {
        return switch (dtype) {
            case FLOAT16, BFLOAT16, BOOL -> true;
            case COMPLEX64 -> op != ReduceOp.SUM;
            case UINT8, UINT16 -> op != ReduceOp.SUM || smallIntSumSaturates;
            case UINT32, UINT64 -> op != ReduceOp.SUM;
            case INT8, INT16 -> op == ReduceOp.SUM && smallIntSumSaturates;
            case INT32, INT64, FLOAT32, FLOAT64 -> false;
        };
    }

    /** A C function pointer that reduces {@code dtype} elements with {@code op}, valid for the life of the process. */
    static MemorySegment functionPointer(ReduceOp op, DType dtype) {
        MethodHandle target = MethodHandles.insertArguments(APPLY, 0, op, dtype);
        return Linker.nativeLinker().upcallStub(target, FN, Arena.global());
    }

    /** The upcall body. Never throws. */
    private static void apply(ReduceOp op, DType dtype, MemorySegment in, MemorySegment inout,
                              MemorySegment lenPtr, MemorySegment typePtr) {
        try {
            int len = lenPtr.reinterpret(4).get(ValueLayout.JAVA_INT, 0);
            if (len <= 0) return;
            long bytes = (long) len * dtype.itemSize();
            Reducer.reduce(op, dtype, inout.reinterpret(bytes), 0, in.reinterpret(bytes), 0, len);
        } catch (Throwable t) {
            FAILURE.compareAndSet(null, t);
        }
    }

    /** Whether an upcall failed since the last {@link #takeFailure()} (one volatile read). */
    static boolean failed() {
        return FAILURE.get() != null;
    }

    /** The first failure of any upcall since the last call, or null; clears it. */
    static Throwable takeFailure() {
        return FAILURE.getAndSet(null);
    }

    /** Test hook: what {@link #apply} records when the reduction itself fails. */
    static void recordFailureForTest(Throwable t) {
        FAILURE.compareAndSet(null, t);
    }

    /** Test hook: invokes the upcall body directly, as MPI would. */
    static void applyForTest(ReduceOp op, DType dtype, MemorySegment in, MemorySegment inout, MemorySegment lenPtr) {
        apply(op, dtype, in, inout, lenPtr, MemorySegment.NULL);
    }
}
