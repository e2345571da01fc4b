package dev.jdist.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Files the test fixtures (namespaces, the Slurm cluster) create and must leave nothing of. */
public final class TestFiles {
    private TestFiles() {}

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
