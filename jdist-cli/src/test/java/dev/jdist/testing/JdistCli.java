package dev.jdist.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** Runs the real {@code jdist} command (the shaded jar that {@code mvn package} built) in a child JVM, bounded in time. */
public final class JdistCli {
    /** The jar integration tests run: failsafe runs after {@code package}, so it exists. */
    public static final Path JAR = Path.of("target", "jdist.jar").toAbsolutePath();

    private JdistCli() {}

    /** {@code java -jar jdist.jar ARGS} with {@code env} added to the test's environment. */
    public static CommandResult run(Duration timeout, Map<String, String> env, String... args) {
        if (!Files.isRegularFile(JAR)) {
            throw new IllegalStateException(JAR + " is missing: run the integration tests with `mvn verify` (package builds it)");
        }
        List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", JAR.toString()));
        argv.addAll(Arrays.asList(args));
        return CommandResult.run(timeout, null, env, null, argv);
    }
}
