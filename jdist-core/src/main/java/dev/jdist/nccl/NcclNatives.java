package dev.jdist.nccl;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The two bound libraries, opened once per process (per override setting) and shared by every group. */
record NcclNatives(CudaRuntime cuda, NcclApi nccl) {

    private static final Map<String, NcclNatives> LOADED = new ConcurrentHashMap<>();

    /**
     * Opens libcudart and libnccl as {@link NativeLibraries} describes.
     *
     * @throws UnsatisfiedLinkError naming what was tried and the variable that overrides it
     */
    static NcclNatives load(Map<String, String> env) {
        String key = env.getOrDefault(NativeLibraries.NCCL_LIBRARY_ENV, "") + "\0"
                + env.getOrDefault(NativeLibraries.CUDART_LIBRARY_ENV, "") + "\0" + env.getOrDefault("CUDA_HOME", "");
        NcclNatives n = LOADED.get(key);
        if (n != null) return n;
        synchronized (LOADED) {
            n = LOADED.get(key);
            if (n == null) {
                CudaRuntime cuda = new CudaRuntime(NativeLibraries.openCudart(env));
                NcclApi nccl = new NcclApi(NativeLibraries.openNccl(env));
                n = new NcclNatives(cuda, nccl);
                LOADED.put(key, n);
            }
            return n;
        }
    }
}
