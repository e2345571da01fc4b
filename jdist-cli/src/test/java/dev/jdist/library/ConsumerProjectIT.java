package dev.jdist.library;

import dev.jdist.BuildInfo;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.LongTest;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jdist as a Maven dependency, the way docs/using-jdist.md tells a user to get it: {@code mvn install} in
 * (a copy of) this repository, then the separate project {@code examples/maven-consumer} builds against
 * the installed artifacts, and its one program runs as a 2-rank job with plain {@code java -cp}, under
 * {@code jdist launch} and under {@code mpirun}: the same file, unchanged.
 *
 * <p>The installed artifacts go to a private local repository: a folder that links every entry of the
 * build's own local repository except {@code dev/jdist}, so nothing is downloaded twice and the user's
 * repository keeps whatever jdist it had.
 *
 * <p>It rebuilds the whole project with Maven (javadoc and source jars included) before the consumer builds: minutes of
 * both cores, so it runs in the long tier.
 */
@LongTest
@Timeout(1800)
class ConsumerProjectIT {
    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(20);
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    @TempDir
    static Path work;

    static Path root;
    static Path repo;
    static Path consumer;
    static String classPath;

    @BeforeAll
    static void installAndBuildTheConsumer() throws IOException {
        root = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        while (root != null && !Files.exists(root.resolve("examples/maven-consumer/pom.xml"))) root = root.getParent();
        assertThat(root).as("the repository root above " + System.getProperty("user.dir")).isNotNull();
        repo = privateRepository(work.resolve("repo"));

        // 1. `mvn install` of jdist itself, as docs/using-jdist.md says (in a copy: this build's own target/
        //    folders stay as they are); tests are not run again.
        Path source = work.resolve("jdist");
        copyTree(root, source);
        CommandResult install = mvn(source, "install", "-Dmaven.test.skip=true");
        assertThat(install.exitCode()).as("mvn install of jdist:%n%s", install).isZero();
        String version = BuildInfo.version();
        for (String artifact : List.of("jdist-core", "jdist-cli")) {
            Path dir = repo.resolve("dev/jdist/" + artifact + "/" + version);
            for (String suffix : List.of(".pom", ".jar", "-sources.jar", "-javadoc.jar")) {
                assertThat(dir.resolve(artifact + "-" + version + suffix)).as("installed by mvn install").isRegularFile();
            }
        }
        assertThat(repo.resolve("dev/jdist/jdist-parent/" + version + "/jdist-parent-" + version + ".pom")).isRegularFile();

        // 2. The consumer project builds against what was installed.
        consumer = work.resolve("consumer");
        copyTree(root.resolve("examples/maven-consumer"), consumer);
        CommandResult build = mvn(consumer, "package", "dependency:build-classpath", "-Dmdep.outputFile=cp.txt",
                "-Djdist.version=" + version);
        assertThat(build.exitCode()).as("the consumer's build:%n%s", build).isZero();
        String deps = Files.readString(consumer.resolve("cp.txt")).strip();
        assertThat(deps).contains(repo.resolve("dev/jdist/jdist-core/" + version).toString());
        classPath = consumer.resolve("target/classes") + ":" + deps;
    }

    /** The private repository's links go before JUnit deletes the folder (it would warn about each one). */
    @AfterAll
    static void removeLinks() throws IOException {
        if (repo == null) return;
        for (Path dir : List.of(repo, repo.resolve("dev"))) {
            try (Stream<Path> entries = Files.list(dir)) {
                for (Path p : entries.toList()) if (Files.isSymbolicLink(p)) Files.delete(p);
            }
        }
    }

    @Test
    void runsAsATwoRankJobWithPlainJavaCp() throws IOException {
        int port = FreePorts.block(2);
        Path hostfile = work.resolve("hosts.json");
        Files.writeString(hostfile, "[[\"127.0.0.1:" + port + "\"], [\"127.0.0.1:" + (port + 1) + "\"]]\n");
        List<CompletableFuture<CommandResult>> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Map<String, String> env = Map.of("MLX_RANK", Integer.toString(r), "MLX_HOSTFILE", hostfile.toString());
            // Both ranks at once, each on its own thread (the common pool may have a single thread).
            ranks.add(CompletableFuture.supplyAsync(() -> CommandResult.run(RUN_TIMEOUT, consumer, env, null,
                    List.of(java(), "-cp", classPath, "example.AllSumCheck")), task -> Thread.ofPlatform().start(task)));
        }
        for (int r = 0; r < 2; r++) {
            CommandResult c = ranks.get(r).join();
            assertThat(c.exitCode()).as("rank %d: %s", r, c).isZero();
            assertThat(c.stdout()).isEqualTo("rank " + r + " of 2 (ring): all_sum ok\n");
            assertThat(c.stderr()).as("no JVM warning, nothing else on stderr").isEmpty();
        }
    }

    @Test
    void runsUnderJdistLaunch() throws IOException {
        Path jar = root.resolve("jdist-cli/target/jdist.jar");
        assertThat(jar).as("the shaded jar (built by the package phase)").exists();
        CommandResult c = CommandResult.run(RUN_TIMEOUT, consumer, Map.of("NO_COLOR", "1"), null, List.of(java(), "-jar",
                jar.toString(), "launch", "-n", "2", "--starting-port", Integer.toString(FreePorts.block(2)),
                "src/main/java/example/AllSumCheck.java"));
        assertThat(c.exitCode()).as(c.toString()).isZero();
        assertThat(c.stdout().lines().sorted().toList())
                .containsExactly("rank 0 of 2 (ring): all_sum ok", "rank 1 of 2 (ring): all_sum ok");
        assertThat(c.stderr()).as("no JVM warning").doesNotContain("WARNING");
    }

    @Test
    void runsUnderMpirun() {
        Requirements.require(Requirements.command("mpirun.openmpi", "openmpi-bin"));
        List<String> cmd = new ArrayList<>(List.of("mpirun.openmpi", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none",
                "-n", "2"));
        if ("0".equals(uid())) cmd.add(1, "--allow-run-as-root");
        cmd.add(java());
        cmd.addAll(BuildInfo.jvmFlags());      // the mpi backend binds libmpi with java.lang.foreign
        cmd.addAll(List.of("-cp", classPath, "example.AllSumCheck"));
        CommandResult c = CommandResult.run(RUN_TIMEOUT, consumer, Map.of(), null, cmd);
        assertThat(c.exitCode()).as(c.toString()).isZero();
        assertThat(c.stdout().lines().sorted().toList())
                .containsExactly("rank 0 of 2 (mpi): all_sum ok", "rank 1 of 2 (mpi): all_sum ok");
        assertThat(c.stderr()).as("no JVM warning").doesNotContain("WARNING");
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static String uid() {
        CommandResult id = CommandResult.run(Duration.ofSeconds(10), "id", "-u");
        return id.stdout().strip();
    }

    /** Maven with this JVM's JDK and the private local repository; offline when the outer build is. */
    private static CommandResult mvn(Path dir, String... args) {
        String home = System.getProperty("jdist.it.mavenHome");
        String mvn = home != null && !home.isBlank() ? Path.of(home, "bin", "mvn").toString() : "mvn";
        List<String> cmd = new ArrayList<>(List.of(mvn, "-B", "-q", "-Dmaven.repo.local=" + repo));
        if (System.getProperty("jdist.it.offline", "").equals("offline=true")) cmd.add("-o");   // "offline=${settings.offline}"
        cmd.addAll(List.of(args));
        Map<String, String> env = new HashMap<>();
        env.put("JAVA_HOME", System.getProperty("java.home"));
        env.put("MAVEN_OPTS", "--sun-misc-unsafe-memory-access=allow");
        return CommandResult.run(BUILD_TIMEOUT, dir, env, null, cmd);
    }

    /**
     * A local repository that shares everything with this build's ({@code jdist.it.localRepository}, else
     * ~/.m2/repository) except jdist's own artifacts: links to every entry, and a real {@code dev/jdist}.
     */
    private static Path privateRepository(Path dir) throws IOException {
        String configured = System.getProperty("jdist.it.localRepository");
        Path shared = configured != null && !configured.isBlank() ? Path.of(configured)
                : Path.of(System.getProperty("user.home"), ".m2", "repository");
        Files.createDirectories(dir.resolve("dev/jdist"));
        if (!Files.isDirectory(shared)) return dir;
        try (Stream<Path> top = Files.list(shared)) {
            for (Path p : top.toList()) {
                if (p.getFileName().toString().equals("dev")) continue;
                Files.createSymbolicLink(dir.resolve(p.getFileName().toString()), p);
            }
        }
        if (Files.isDirectory(shared.resolve("dev"))) {
            try (Stream<Path> devs = Files.list(shared.resolve("dev"))) {
                for (Path p : devs.toList()) {
                    if (p.getFileName().toString().equals("jdist")) continue;
                    Files.createSymbolicLink(dir.resolve("dev").resolve(p.getFileName().toString()), p);
                }
            }
        }
        return dir;
    }

    /** Copies a source tree, leaving out version control, build outputs and benchmark results. */
    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> all = Files.walk(from)) {
            all.filter(p -> {
                for (Path part : from.relativize(p)) {
                    String n = part.toString();
                    if (n.equals(".git") || n.equals("target") || n.equals("bench-results")) return false;
                }
                return true;
            }).forEach(p -> {
                try {
                    Path dest = to.resolve(from.relativize(p).toString());
                    if (Files.isDirectory(p)) Files.createDirectories(dest);
                    else Files.copy(p, dest, StandardCopyOption.COPY_ATTRIBUTES);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
