package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.BuildInfo;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Turns the command tokens into the argv every rank executes (docs/reference/launcher.md §1.4): {@code --python},
 * a {@code .java} source file, a {@code .jar}, a main class (with {@code --class-path}), or any command as-is.
 * Java targets get jdist's own jar on the class path and the JVM flags jdist needs.
 */
public final class CommandResolver {

    /**
     * JVM flags every Java rank gets: {@link BuildInfo#jvmFlags()} (native access, for the FFM backends and
     * the array cache). Not the Vector API module: see docs/launching.md for when it pays and how to add it.
     */
    public static final List<String> JDIST_JVM_FLAGS = BuildInfo.jvmFlags();

    private CommandResolver() {
    }

    /** The java launcher for Java targets: {@code --java}, else this JVM's {@code bin/java}. */
    public static String javaPath(String javaOption) {
        if (javaOption != null) {
            return javaOption;
        }
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The class-path entries the launcher loaded jdist-core from (the shaded jdist.jar, or classes directories in a build). */
    public static List<String> jdistClassPath() {
        List<String> out = new ArrayList<>();
        for (Class<?> c : List.of(dev.jdist.Distributed.class)) {
            try {
                var src = c.getProtectionDomain().getCodeSource();
                if (src != null && src.getLocation() != null) {
                    String p = Path.of(src.getLocation().toURI()).toString();
                    if (!out.contains(p)) {
                        out.add(p);
                    }
                }
            } catch (URISyntaxException | SecurityException | IllegalArgumentException ignored) {
                // fall back to java.class.path below
            }
        }
        if (out.isEmpty()) {
            for (String e : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
                if (!e.isEmpty() && Files.exists(Path.of(e))) {
                    out.add(Path.of(e).toAbsolutePath().toString());
                }
            }
        }
        return out;
    }

    /**
     * The JVM options in {@code JDIST_JAVA_OPTIONS} (split at whitespace, as {@code JDK_JAVA_OPTIONS} without its quoting):
     * every Java rank gets them before the {@code --java-opt} values, so a site or a test sets them once for every job.
     */
    public static List<String> environmentJavaOptions(Map<String, String> env) {
        String v = env.get("JDIST_JAVA_OPTIONS");
        return v == null || v.isBlank() ? List.of() : List.of(v.strip().split("\\s+"));
    }

    /** Whether {@code command} is a Java target (§1.4: a .java file, a .jar, or a main class with --class-path). */
    public static boolean isJavaTarget(List<String> command, String python, String classPath) {
        if (python != null || command.isEmpty()) {
            return false;
        }
        String c0 = command.get(0);
        return c0.endsWith(".java") || c0.endsWith(".jar") || classPath != null;
    }

    /**
     * Resolves {@code command} (non-empty, leading {@code --} removed).
     *
     * @param jdistClassPath the class-path entries appended for Java targets (normally {@link #jdistClassPath()})
     */
    public static List<String> resolve(List<String> command, String python, String java, String classPath,
                                       List<String> javaOpts, List<String> jdistClassPath) {
        if (command.isEmpty()) {
            throw CliFailure.usage("No script is provided; give the program to run, e.g. jdist launch -n 2 -- python3 train.py");
        }
        boolean javaOptions = classPath != null || !javaOpts.isEmpty();
        if (python != null) {
            if (javaOptions) {
                throw CliFailure.usage("--python cannot be combined with --class-path or --java-opt (those are for Java programs)");
            }
            List<String> argv = new ArrayList<>();
            argv.add(python);
            argv.addAll(command);
            return argv;
        }
        String c0 = command.get(0);
        String j = javaPath(java);
        List<String> argv = new ArrayList<>();
        if (c0.endsWith(".java")) {
            argv.add(j);
            argv.addAll(JDIST_JVM_FLAGS);
            argv.addAll(javaOpts);
            argv.add("-cp");
            argv.add(classPath(classPath, jdistClassPath));
            argv.addAll(command);
            return argv;
        }
        if (c0.endsWith(".jar")) {
            if (classPath != null) {
                throw CliFailure.usage("--class-path cannot be used with a .jar (" + c0 + "): java -jar ignores the class path; "
                        + "put the dependencies in the jar's Class-Path manifest entry, or run a main class with --class-path "
                        + c0 + " MAIN_CLASS");
            }
            argv.add(j);
            argv.addAll(JDIST_JVM_FLAGS);
            argv.addAll(javaOpts);
            argv.add("-jar");
            argv.addAll(command);
            return argv;
        }
        if (classPath != null) {
            argv.add(j);
            argv.addAll(JDIST_JVM_FLAGS);
            argv.addAll(javaOpts);
            argv.add("-cp");
            argv.add(classPath(classPath, jdistClassPath));
            argv.addAll(command);
            return argv;
        }
        return new ArrayList<>(command);
    }

    private static String classPath(String user, List<String> jdist) {
        List<String> parts = new ArrayList<>();
        if (user != null && !user.isEmpty()) {
            parts.add(user);
        }
        parts.addAll(jdist);
        return String.join(":", parts);
    }
}
