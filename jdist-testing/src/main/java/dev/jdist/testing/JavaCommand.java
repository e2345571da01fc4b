package dev.jdist.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a child JVM that runs a test program ({@code *Program}, a class with a {@code main}): this
 * JVM's {@code java}, the test class path, and jdist's JVM flags, the ones {@code jdist launch} gives Java ranks.
 *
 * <p>The flags come from {@code dev.jdist.BuildInfo.jvmFlags()}, the one place they are read (from the root pom,
 * through jdist-core's {@code build.properties}). This module cannot depend on jdist-core (jdist-core's tests depend
 * on it), so it calls BuildInfo by name, from the class path of the test that runs.
 */
public final class JavaCommand {
    /** Options that make a short-lived child start and finish sooner; they change nothing it computes. */
    public static final List<String> QUICK_START = List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto");

    private JavaCommand() {}

    /** The {@code java} of the JVM running the tests. */
    public static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The test class path: surefire's and failsafe's (their JVM may run from a manifest-only jar), else this JVM's. */
    public static String classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
    }

    /** jdist's JVM flags ({@code dev.jdist.BuildInfo.jvmFlags()}): what {@code jdist launch} gives Java ranks. */
    public static List<String> jdistJvmFlags() {
        try {
            Object flags = Class.forName("dev.jdist.BuildInfo").getMethod("jvmFlags").invoke(null);
            List<String> out = new ArrayList<>();
            for (Object f : (List<?>) flags) out.add((String) f);
            return out;
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new IllegalStateException("jdist's JVM flags come from dev.jdist.BuildInfo.jvmFlags(), which is not on this "
                    + "test's class path (" + e + "): child JVMs with jdist's flags need jdist-core", e);
        }
    }

    /** {@code java <jdist's flags> <QUICK_START> -cp <test class path> MAIN ARGS}. */
    public static List<String> of(Class<?> mainClass, String... args) {
        return of(List.of(), mainClass, args);
    }

    /** {@link #of(Class, String...)} with {@code jvmOptions} (say {@code -Xmx256m}) after jdist's flags. */
    public static List<String> of(List<String> jvmOptions, Class<?> mainClass, String... args) {
        return command(classPath(), jvmOptions, mainClass.getName(), args);
    }

    /**
     * {@code java <jdist's flags> <QUICK_START> JVM-OPTIONS -cp CLASS-PATH MAIN ARGS}: another class path (a built jar, say).
     * In integration tests, with {@link ChildAotCache}'s cache where it can be used (then with the test jar in place of
     * {@code target/test-classes}).
     */
    public static List<String> command(String classPath, List<String> jvmOptions, String mainClass, String... args) {
        List<String> options = new ArrayList<>(jdistJvmFlags());
        options.addAll(QUICK_START);
        options.addAll(jvmOptions);
        ChildAotCache.Choice aot = ChildAotCache.choose(classPath, options);
        List<String> cmd = new ArrayList<>();
        cmd.add(java());
        cmd.addAll(ChildAotCache.withCache(options, aot.options()));
        cmd.addAll(List.of("-cp", aot.classPath(), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** {@code java -cp <test class path> MAIN ARGS}: no option at all, as a build tool, an IDE, mpirun or srun starts it. */
    public static List<String> plain(Class<?> mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(java(), "-cp", classPath(), mainClass.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
