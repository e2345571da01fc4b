package dev.jdist.nccl;

import dev.jdist.spi.NativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Finds and opens libnccl and the CUDA runtime. Nothing here runs unless the nccl backend is chosen
 * (or {@link NcclBackend#isAvailable()} is asked).
 *
 * <p>Search order, per library: the override variable ({@value #NCCL_LIBRARY_ENV} /
 * {@value #CUDART_LIBRARY_ENV}: a file path, or a bare soname for the dynamic linker), otherwise each
 * default soname through the dynamic linker ({@code LD_LIBRARY_PATH}, the ldconfig cache), then the
 * same names under {@code $CUDA_HOME/lib64} and {@code /usr/local/cuda/lib64}.
 */
final class NativeLibraries {

    /** Path (or soname) of libnccl; default {@code libnccl.so.2}, then {@code libnccl.so}. */
    static final String NCCL_LIBRARY_ENV = "JDIST_NCCL_LIBRARY";
    /** Path (or soname) of the CUDA runtime; default {@code libcudart.so.13}, {@code .so.12}, {@code .so}. */
    static final String CUDART_LIBRARY_ENV = "JDIST_CUDART_LIBRARY";

    static final List<String> NCCL_NAMES = List.of("libnccl.so.2", "libnccl.so");
    static final List<String> CUDART_NAMES = List.of("libcudart.so.13", "libcudart.so.12", "libcudart.so");

    /** An opened library: what was asked for and its symbols. */
    record Opened(String name, SymbolLookup lookup) {}

    private NativeLibraries() {}

    static Opened openNccl(Map<String, String> env) {
        return open("libnccl (NCCL)", NCCL_LIBRARY_ENV, NCCL_NAMES, env);
    }

    static Opened openCudart(Map<String, String> env) {
        return open("libcudart (CUDA runtime)", CUDART_LIBRARY_ENV, CUDART_NAMES, env);
    }

    /**
     * Opens the first candidate that loads.
     *
     * @throws UnsatisfiedLinkError naming every candidate tried and the override variable
     */
    static Opened open(String what, String overrideVar, List<String> defaults, Map<String, String> env) {
        NativeAccess.missing("the nccl backend (" + what + ")").ifPresent(m -> { throw new UnsatisfiedLinkError(m); });
        String override = env.get(overrideVar);
        List<String> candidates = new ArrayList<>();
        if (override != null && !override.isBlank()) {
            candidates.add(override.strip());
        } else {
            candidates.addAll(defaults);
            for (String dir : cudaDirs(env)) {
                for (String name : defaults) candidates.add(dir + "/" + name);
            }
        }
        List<String> failures = new ArrayList<>();
        for (String c : candidates) {
            try {
                SymbolLookup lookup = c.contains("/")
                        ? SymbolLookup.libraryLookup(Path.of(c), Arena.global())
                        : SymbolLookup.libraryLookup(c, Arena.global());
                return new Opened(c, lookup);
            } catch (IllegalArgumentException | UnsatisfiedLinkError | SecurityException e) {
                failures.add(c + (c.contains("/") && !Files.exists(Path.of(c)) ? " (no such file)" : " (" + e.getMessage() + ")"));
            }
        }
        throw new UnsatisfiedLinkError("could not load " + what + "; tried " + String.join(", ", failures)
                + (override != null && !override.isBlank()
                        ? "; fix " + overrideVar + " (it names the library file to load)"
                        : "; install it, add its folder to LD_LIBRARY_PATH, or set " + overrideVar + " to its path"));
    }

    private static List<String> cudaDirs(Map<String, String> env) {
        List<String> dirs = new ArrayList<>();
        String home = env.get("CUDA_HOME");
        if (home != null && !home.isBlank()) dirs.add(home.strip() + "/lib64");
        dirs.add("/usr/local/cuda/lib64");
        return dirs;
    }
}
