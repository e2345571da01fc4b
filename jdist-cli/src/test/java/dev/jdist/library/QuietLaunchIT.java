package dev.jdist.library;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the user sees and what the ranks get: the launcher prints its own lines and no JVM warning, and
 * {@code bin/jdist} passes the caller's environment to the ranks unchanged and works with a reduced PATH.
 */
@Timeout(300)
class QuietLaunchIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    private static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("bin/jdist"))) dir = dir.getParent();
        assertThat(dir).as("the repository root").isNotNull();
        return dir;
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    @Test
    void aFailingNonJavaJobPrintsOnlyTheLaunchersLines() {
        Path jar = root().resolve("jdist-cli/target/jdist.jar");
        CommandResult r = CommandResult.run(TIMEOUT, null, Map.of("NO_COLOR", "1"), null,
                List.of(java(), "-jar", jar.toString(), "launch", "-n", "2", "--", "sh", "-c", "exit 2"));
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.stdout()).isEmpty();
        assertThat(r.stderr().lines().toList()).as(r.stderr()).isNotEmpty()
                .allMatch(l -> l.startsWith("[WARN] Node with rank") || l.startsWith("[ERROR] job failed"));
    }

    @Test
    void theVersionAndHelpPrintNoJvmWarning() {
        Path jar = root().resolve("jdist-cli/target/jdist.jar");
        for (List<String> args : List.of(List.of("--version"), List.of("help", "launch"))) {
            CommandResult r = CommandResult.run(TIMEOUT, null, Map.of(), null,
                    java.util.stream.Stream.concat(List.of(java(), "-jar", jar.toString()).stream(), args.stream()).toList());
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(r.stderr()).as(r.toString()).isEmpty();
        }
        CommandResult v = CommandResult.run(TIMEOUT, java(), "-jar", jar.toString(), "--version");
        assertThat(v.stdout()).startsWith("jdist " + dev.jdist.BuildInfo.version() + "\n");
    }

    /** A reduced PATH and the caller's JAVA_HOME reach the ranks as they were; bin/jdist still finds its tools. */
    @Test
    void binJdistPassesTheCallersEnvironmentToTheRanksUnchanged() throws IOException {
        Path root = root();
        Map<String, String> env = Map.of("PATH", "/opt/my-mpi/bin", "JAVA_HOME", System.getProperty("java.home"),
                "JDIST_NO_BUILD", "1", "NO_COLOR", "1", "JDIST_CHECK", "a b  c");
        CommandResult r = CommandResult.run(TIMEOUT, root, env, null, List.of("/bin/bash", root.resolve("bin/jdist").toString(),
                "launch", "-n", "2", "--starting-port", Integer.toString(FreePorts.block(2)), "--",
                "/bin/sh", "-c", "echo \"rank $MLX_RANK|$PATH|$JAVA_HOME|$JDIST_CHECK|${MAVEN_OPTS-unset}\""));
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout().lines().sorted().toList()).containsExactly(
                "rank 0|/opt/my-mpi/bin|" + System.getProperty("java.home") + "|a b  c|" + System.getenv().getOrDefault("MAVEN_OPTS", "unset"),
                "rank 1|/opt/my-mpi/bin|" + System.getProperty("java.home") + "|a b  c|" + System.getenv().getOrDefault("MAVEN_OPTS", "unset"));
        assertThat(r.stderr()).as(r.toString()).isEmpty();
    }
}
