package dev.jdist.spi;

import dev.jdist.BuildInfo;

import java.util.Optional;

/**
 * Whether this JVM lets jdist call native code. The backends that bind a native library with
 * {@code java.lang.foreign} (mpi, nccl, jaccl) ask before loading it: without native access the JVM
 * would print a four-line warning on the first call (and a future JDK will refuse the call), so they
 * fail instead with the one line from {@link #missing}, which names the flag to add. Everything
 * else in jdist (the ring, the kernels) needs no native access; the array cache turns itself off.
 */
public final class NativeAccess {
    private NativeAccess() {}

    /** Whether jdist's code may call restricted {@code java.lang.foreign} methods without a warning. */
    public static boolean enabled() {
        return NativeAccess.class.getModule().isNativeAccessEnabled();
    }

    /** The option that grants it: {@link BuildInfo#jvmFlags()} on the class path, or for jdist's module on the module path. */
    public static String flag() {
        Module m = NativeAccess.class.getModule();
        return m.isNamed() ? "--enable-native-access=" + m.getName() : String.join(" ", BuildInfo.jvmFlags());
    }

    /**
     * Empty when native access is enabled; otherwise one line saying that {@code user} (e.g. "the mpi
     * backend (libmpi)") needs it and which flag to add.
     */
    public static Optional<String> missing(String user) {
        if (enabled()) return Optional.empty();
        return Optional.of(user + " calls native code through java.lang.foreign, which this JVM does not allow jdist: "
                + "add " + flag() + " to the java command (jdist launch adds it)");
    }
}
