package dev.jdist.mpi;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/** Finding Debian's Open MPI and MPICH for tests; a missing one skips, or fails when {@code CI=true}. */
final class MpiTestSupport {
    private MpiTestSupport() {}

    /** Skips the test naming what is missing, or fails it under {@code CI=true} (CI must install it). */
    static void require(boolean present, String missing) {
        if (present) return;
        String msg = missing + " (bin/test installs it when run as root)";
        if ("true".equals(System.getenv("CI"))) Assertions.fail("CI=true but " + msg);
        Assumptions.abort(msg);
    }

    /** An executable on PATH or in /usr/bin. */
    static Optional<Path> executable(String name) {
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/bin:/usr/local/bin";
        for (String dir : path.split(":")) {
            if (dir.isEmpty()) continue;
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) return Optional.of(p);
        }
        return Optional.empty();
    }

    /** The real file of a shared library by file name, searched under the usual library folders. */
    static Optional<Path> library(String fileName) {
        for (String root : List.of("/usr/lib", "/usr/lib64", "/usr/local/lib", "/opt/homebrew/lib")) {
            Path r = Path.of(root);
            if (!Files.isDirectory(r)) continue;
            try (Stream<Path> s = Files.find(r, 4, (p, a) -> p.getFileName().toString().equals(fileName))) {
                Optional<Path> hit = s.findFirst();
                if (hit.isPresent()) return Optional.of(hit.get().toRealPath());
            } catch (IOException | RuntimeException e) {
                // unreadable folder: keep looking elsewhere
            }
        }
        return Optional.empty();
    }
}
