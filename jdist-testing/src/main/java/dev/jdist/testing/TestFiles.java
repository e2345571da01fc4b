package dev.jdist.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Files the test fixtures (namespaces, the Slurm cluster) create and must leave nothing of, and where the repository is. */
public final class TestFiles {
    private TestFiles() {}

    /** The repository's root: the nearest folder above the working directory (a module's, under Maven) with examples/AllSum.java. */
    public static Path repoRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("examples/AllSum.java"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no repository root (with examples/AllSum.java) above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }

    /** Deletes {@code root} and everything below it, best effort (a fixture's teardown goes on whatever remains). */
    public static void deleteRecursively(Path root) {
        if (root == null || !Files.exists(root)) return;
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException ignored) {
            // best effort
        }
    }
}
