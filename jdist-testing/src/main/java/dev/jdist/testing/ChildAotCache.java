package dev.jdist.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * An ahead-of-time cache (JDK 25's {@code -XX:AOTCache}) for the integration tests' child JVMs: the classes of the JDK,
 * Jackson and jdist that a rank loads and links at start, ready to map. It cuts a child's CPU time by about a third
 * (1.54 to 1.10 CPU-seconds for a two-rank {@code RingCheckProgram}), and the integration tests start hundreds of children
 * on two cores. It changes nothing a child computes: a JVM whose class path or options do not match the cache ignores it.
 *
 * <p>On only where the build asks for it (the system property {@code jdist.test.aot.dir}, set for failsafe by the root
 * pom) and only for class paths of jars: a cache cannot hold classes from a directory, so the module's
 * {@code target/test-classes} is replaced by the test jar that the package phase built from it, when that jar is current.
 * The first child that finds no cache starts a training job once (two ranks of {@link AotTraining}, in the background);
 * children started meanwhile run without it. The tests' {@code jdist} command ({@code java -jar jdist.jar}) gets a cache
 * of its own the same way ({@link #forJar}). The cache lives in the build directory, keyed by the class path (with each
 * jar's size and time), the options and the JDK.
 */
public final class ChildAotCache {
    /** The system property that names the cache directory; unset: no cache. */
    static final String DIR_PROPERTY = "jdist.test.aot.dir";

    private static final Map<String, Boolean> TRAINING_STARTED = new ConcurrentHashMap<>();
    /** Per {@code test-classes} directory, its current test jar (empty: none, or older than a class). */
    private static final Map<Path, Optional<Path>> TEST_JARS = new ConcurrentHashMap<>();

    private ChildAotCache() {}

    /** The class path and the cache option for a child with these JVM options; the class path unchanged and no option when off. */
    record Choice(String classPath, List<String> options) {}

    static Choice choose(String classPath, List<String> jvmOptions) {
        String dir = System.getProperty(DIR_PROPERTY);
        if (dir == null || dir.isBlank()) return new Choice(classPath, List.of());
        try {
            List<Path> jars = jarsOnly(classPath);
            if (jars == null) return new Choice(classPath, List.of());
            String jarPath = String.join(":", jars.stream().map(Path::toString).toList());
            List<String> options = cachedOptions(jvmOptions);
            Path cacheDir = Files.createDirectories(Path.of(dir));
            Path cache = cacheDir.resolve(key(jars, options) + ".aot");
            adoptFinishedTraining(cache);
            if (Files.isRegularFile(cache) && Files.size(cache) > 0) {
                return new Choice(jarPath, List.of("-XX:AOTCache=" + cache));
            }
            startTrainingOnce(cache, out -> twoRanks(cache, out, jarPath, options));
            return new Choice(classPath, List.of());
        } catch (IOException | RuntimeException e) {
            return new Choice(classPath, List.of());   // no cache: the child starts as it would anyway
        }
    }

    /**
     * The cache option for {@code java JVM-OPTIONS -jar JAR} (the tests' {@code jdist} command), when a cache for this jar
     * and these options exists; else none, and the first call starts its training once:
     * {@code java JVM-OPTIONS -XX:AOTCacheOutput=... -jar JAR TRAINING-ARGS}.
     */
    public static List<String> forJar(Path jar, List<String> jvmOptions, List<String> trainingArgs) {
        String dir = System.getProperty(DIR_PROPERTY);
        if (dir == null || dir.isBlank() || !Files.isRegularFile(jar)) return List.of();
        try {
            List<String> options = cachedOptions(jvmOptions);
            Path cache = Files.createDirectories(Path.of(dir)).resolve("jar-" + key(List.of(jar.toAbsolutePath()), options) + ".aot");
            adoptFinishedTraining(cache);
            if (Files.isRegularFile(cache) && Files.size(cache) > 0) return List.of("-XX:AOTCache=" + cache);
            startTrainingOnce(cache, out -> {
                List<String> cmd = new ArrayList<>(List.of(JavaCommand.java()));
                cmd.addAll(options);
                cmd.addAll(List.of("-XX:AOTCacheOutput=" + out.apply(0), "-jar", jar.toAbsolutePath().toString()));
                cmd.addAll(trainingArgs);
                return List.of(new ProcessBuilder(cmd));
            });
            return List.of();
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    /** The options that shape what is cached (GC, compiler, modules); heap sizes and properties do not. */
    private static List<String> cachedOptions(List<String> jvmOptions) {
        return jvmOptions.stream().filter(o -> o.startsWith("-XX:") || o.startsWith("--")).toList();
    }

    /** The class path as jars: a {@code test-classes} directory becomes its current test jar; null when that cannot be done. */
    private static List<Path> jarsOnly(String classPath) throws IOException {
        List<Path> out = new ArrayList<>();
        for (String e : classPath.split(":")) {
            if (e.isEmpty()) continue;
            Path p = Path.of(e).toAbsolutePath();
            if (Files.isRegularFile(p) && p.toString().endsWith(".jar")) {
                out.add(p);
            } else if (Files.isDirectory(p) && p.getFileName().toString().equals("test-classes")) {
                // the walk over the directory once per test JVM: its classes do not change while the tests run
                Optional<Path> jar = TEST_JARS.computeIfAbsent(p, ChildAotCache::currentTestJar);
                if (jar.isEmpty()) return null;
                out.add(jar.get());
            } else if (Files.exists(p)) {
                return null;   // target/classes (surefire, before package) or another directory
            }
        }
        return out;
    }

    /** {@code target/*-tests.jar} when it is at least as new as every file under {@code testClasses}, else empty. */
    private static Optional<Path> currentTestJar(Path testClasses) {
        try {
            Path jar;
            try (Stream<Path> s = Files.list(testClasses.getParent())) {
                jar = s.filter(p -> p.getFileName().toString().endsWith("-tests.jar")).findFirst().orElse(null);
            }
            if (jar == null) return Optional.empty();
            long built = Files.getLastModifiedTime(jar).toMillis();
            try (Stream<Path> s = Files.walk(testClasses)) {
                boolean stale = s.filter(Files::isRegularFile).anyMatch(p -> {
                    try {
                        return Files.getLastModifiedTime(p).toMillis() > built;
                    } catch (IOException e) {
                        return true;
                    }
                });
                return stale ? Optional.empty() : Optional.of(jar);
            }
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * {@code options} for a JVM that maps {@code aot} (an option from {@link #choose} or {@link #forJar}, or none):
     * without the {@code -Xshare} ones then, which the JVM refuses beside a cache.
     */
    public static List<String> withCache(List<String> options, List<String> aot) {
        List<String> out = new ArrayList<>(options);
        if (!aot.isEmpty()) out.removeIf(o -> o.startsWith("-Xshare"));
        out.addAll(aot);
        return out;
    }

    private static String key(List<Path> jars, List<String> options) throws IOException {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            d.update(System.getProperty("java.home").getBytes(StandardCharsets.UTF_8));
            d.update(System.getProperty("java.vm.version").getBytes(StandardCharsets.UTF_8));
            for (String o : options) d.update(("\0" + o).getBytes(StandardCharsets.UTF_8));
            for (Path j : jars) {
                d.update(("\0" + j + "\0" + Files.size(j) + "\0" + Files.getLastModifiedTime(j).toMillis()).getBytes(StandardCharsets.UTF_8));
            }
            return HexFormat.of().formatHex(d.digest(), 0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Moves a training's cache into place once its JVM has written it: the test JVM that started the training may have
     * ended before it did (a fork's last test class).
     */
    private static void adoptFinishedTraining(Path cache) {
        if (Files.exists(cache)) return;
        Path rank0 = Path.of(cache + ".rank0");
        Path log = Path.of(cache + ".rank0.log");
        try {
            if (Files.isRegularFile(rank0) && Files.isRegularFile(log) && Files.readString(log).contains("AOTCache creation is complete")) {
                Files.move(rank0, cache, StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException | RuntimeException e) {
            // another JVM moved it, or the training failed: no cache this time
        }
    }

    /** The processes of a training run, given where process i writes its cache. */
    private interface Training {
        List<ProcessBuilder> processes(java.util.function.IntFunction<Path> output) throws IOException;
    }

    /**
     * Starts the training run unless this or another test JVM has (a {@code .training} file marks it), on a daemon
     * thread, bounded to two minutes; the cache that process 0 writes is moved into place.
     */
    private static void startTrainingOnce(Path cache, Training training) throws IOException {
        if (TRAINING_STARTED.putIfAbsent(cache.toString(), true) != null) return;
        Path marker = cache.resolveSibling(cache.getFileName() + ".training");
        try {
            Files.createFile(marker);
        } catch (FileAlreadyExistsException e) {
            return;
        }
        Thread t = new Thread(() -> train(cache, training), "aot-cache-training");
        t.setDaemon(true);
        t.start();
    }

    /** Two ranks of {@link AotTraining}, a job of its own on loopback. */
    private static List<ProcessBuilder> twoRanks(Path cache, java.util.function.IntFunction<Path> output, String jarPath,
                                                 List<String> options) throws IOException {
        int[] ports = FreePorts.distinct(2);
        Path hostfile = cache.resolveSibling(cache.getFileName() + ".hostfile.json");
        Files.writeString(hostfile, "[[\"127.0.0.1:" + ports[0] + "\"], [\"127.0.0.1:" + ports[1] + "\"]]");
        List<ProcessBuilder> out = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            List<String> cmd = new ArrayList<>(List.of(JavaCommand.java()));
            cmd.addAll(options);
            cmd.addAll(List.of("-XX:AOTCacheOutput=" + output.apply(r), "-cp", jarPath, AotTraining.class.getName()));
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.environment().putAll(Map.of("MLX_RANK", Integer.toString(r), "MLX_HOSTFILE", hostfile.toString(),
                    "JDIST_JOB_TOKEN", "aot-training", "JDIST_TIMEOUT", "60", "JDIST_HEARTBEAT", "60s"));
            out.add(pb);
        }
        return out;
    }

    private static void train(Path cache, Training training) {
        List<Process> started = new ArrayList<>();
        try {
            List<ProcessBuilder> processes = training.processes(i -> Path.of(cache + ".rank" + i));
            for (int i = 0; i < processes.size(); i++) {
                started.add(processes.get(i).redirectErrorStream(true)
                        .redirectOutput(Path.of(cache + ".rank" + i + ".log").toFile())
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start());
            }
            boolean ended = true;
            for (Process p : started) ended &= p.waitFor(120, TimeUnit.SECONDS);
            // the JVM writes the cache at exit, whatever the program's status; a cache only holds classes
            if (ended) adoptFinishedTraining(cache);
        } catch (IOException | RuntimeException e) {
            // no cache this time: children start as they would without it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            for (Process p : started) if (p.isAlive()) p.destroyForcibly();
            for (int i = 1; i < started.size(); i++) {
                try {
                    Files.deleteIfExists(Path.of(cache + ".rank" + i));
                } catch (IOException ignored) {
                    // a leftover in the build directory
                }
            }
        }
    }
}
