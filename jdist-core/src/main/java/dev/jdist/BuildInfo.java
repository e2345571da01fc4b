package dev.jdist;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

/**
 * What the build fixed: jdist's version and the JVM flags, defined once in the root pom and
 * written into {@code dev/jdist/build.properties}. The launcher, the benchmarks, the tests and the
 * scripts take them from here.
 *
 * <p>Scripts: {@code java -cp jdist.jar dev.jdist.BuildInfo version|jvm-flags|vector-flags} prints
 * one of them.
 */
public final class BuildInfo {
    private static final Properties PROPERTIES = load();

    private BuildInfo() {}

    /** jdist's version, e.g. {@code 0.1.0-SNAPSHOT}. */
    public static String version() { return PROPERTIES.getProperty("version"); }

    /**
     * The JVM options jdist asks for: native access, which the FFM backends (mpi, nccl, jaccl) need and
     * the array cache uses. A JVM without them runs jdist's ring and everything else.
     */
    public static List<String> jvmFlags() { return split("jvm.flags"); }

    /** The JVM options that turn on the Vector API kernels ({@link dev.jdist.reduce.Kernels}); optional. */
    public static List<String> vectorFlags() { return split("vector.flags"); }

    private static List<String> split(String key) {
        String v = PROPERTIES.getProperty(key, "").strip();
        return v.isEmpty() ? List.of() : Arrays.asList(v.split("\\s+"));
    }

    private static Properties load() {
        Properties p = new Properties();
        try (InputStream in = BuildInfo.class.getResourceAsStream("build.properties")) {
            if (in == null) {
                throw new IllegalStateException("dev/jdist/build.properties is missing from jdist-core's classes; "
                        + "rebuild jdist with Maven (mvn package)");
            }
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read dev/jdist/build.properties", e);
        }
        return p;
    }

    /** Prints one fact for shell scripts: {@code version}, {@code jvm-flags} or {@code vector-flags}. */
    public static void main(String[] args) {
        String what = args.length == 1 ? args[0] : "";
        switch (what) {
            case "version" -> System.out.println(version());
            case "jvm-flags" -> System.out.println(String.join(" ", jvmFlags()));
            case "vector-flags" -> System.out.println(String.join(" ", vectorFlags()));
            default -> {
                System.err.println("usage: java -cp jdist.jar dev.jdist.BuildInfo version|jvm-flags|vector-flags");
                System.exit(2);
            }
        }
    }
}
