package dev.jdist.reduce;

import dev.jdist.BuildInfo;

/**
 * Which element-wise kernels this JVM runs. With the {@code jdk.incubator.vector} module in the JVM
 * ({@code java --add-modules=jdk.incubator.vector ...}) the reductions ({@link Reducer}) and the
 * layers' matrix kernels ({@code dev.jdist.nn.MatrixKernels}) use the Vector API; without it they use
 * portable loops that C2 auto-vectorises. Both give the same reduction bytes; a JVM without the module
 * never loads a Vector API class. Decided once, when this class is first used.
 */
public final class Kernels {
    /** The incubator module that enables the Vector API kernels. */
    public static final String VECTOR_MODULE = "jdk.incubator.vector";

    private static final boolean VECTOR_API = ModuleLayer.boot().findModule(VECTOR_MODULE).isPresent();

    private Kernels() {}

    /** Whether the Vector API kernels run (the module is in the JVM's boot layer). */
    public static boolean vectorApi() { return VECTOR_API; }

    /** One line for diagnostics and benchmark headers: which kernels run, and how to get the other ones. */
    public static String describe() {
        return VECTOR_API
                ? "Vector API kernels (" + VectorKernels.vectorBits() + "-bit vectors; " + VECTOR_MODULE + " is in the JVM)"
                : "portable kernels (start java with " + String.join(" ", BuildInfo.vectorFlags()) + " for the Vector API ones)";
    }
}
