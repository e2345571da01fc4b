package dev.jdist.testing;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Environment requirements of a test. When something is missing the test is skipped with a message
 * naming it, except under CI ({@code CI=true}), where a missing requirement is a failure: CI machines
 * are set up by {@code bin/test} and must run every test.
 *
 * <pre>{@code
 * Requirements.require(Requirements.root(), Requirements.command("ip"), Requirements.file("/usr/sbin/sshd"));
 * Requirements.netnsCluster();   // root + ip + sshd + ssh + ssh-keygen
 * Requirements.require(Requirements.findLibrary("libmpi.so.40").isPresent(), "Open MPI (Debian: libopenmpi-dev)");
 * }</pre>
 */
public final class Requirements {

    /** One requirement: empty when met, else a description of what is missing and how to get it. */
    @FunctionalInterface
    public interface Requirement {
        Optional<String> missing();
    }

    private Requirements() {
    }

    /** Skips (or, with CI=true, fails) the calling test unless every requirement is met. */
    public static void require(Requirement... requirements) {
        List<String> missing = new ArrayList<>();
        for (Requirement r : requirements) {
            r.missing().ifPresent(missing::add);
        }
        if (missing.isEmpty()) {
            return;
        }
        String message = "missing test requirement(s): " + String.join("; ", missing);
        if (isCi()) {
            Assertions.fail(message + " (CI=true, so this is a failure, not a skip; bin/test installs the packages when run as root)");
        } else {
            Assumptions.abort(message);
        }
    }

    /** {@link #require(Requirement...)} for one condition: {@code whatIsMissing} names what is missing and how to get it. */
    public static void require(boolean met, String whatIsMissing) {
        require(() -> met ? Optional.empty() : Optional.of(whatIsMissing));
    }

    /** Everything {@link NetnsCluster} needs: root, {@code ip}, {@code sshd}, {@code ssh}, {@code ssh-keygen}. */
    public static void netnsCluster() {
        require(root(), command("ip", "iproute2"), sshd(), command("ssh", "openssh-client"),
                command("ssh-keygen", "openssh-client"));
    }

    public static boolean isCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    /** The test runs as root (uid 0). */
    public static Requirement root() {
        return () -> isRoot() ? Optional.empty()
                : Optional.of("not running as root (network namespaces and sshd need uid 0; run bin/test as root)");
    }

    /** An executable on PATH; {@code debianPackage} names where it comes from. */
    public static Requirement command(String name, String debianPackage) {
        return () -> findOnPath(name).isPresent() ? Optional.empty()
                : Optional.of("no '" + name + "' on PATH (install the Debian package " + debianPackage + ")");
    }

    public static Requirement command(String name) {
        return () -> findOnPath(name).isPresent() ? Optional.empty()
                : Optional.of("no '" + name + "' on PATH");
    }

    /** A file that must exist. */
    public static Requirement file(String path) {
        return () -> Files.exists(Path.of(path)) ? Optional.empty() : Optional.of("no file " + path);
    }

    /** The OpenSSH server binary. */
    public static Requirement sshd() {
        return () -> sshdPath().isPresent() ? Optional.empty()
                : Optional.of("no sshd (/usr/sbin/sshd; install the Debian package openssh-server)");
    }

    static Optional<Path> sshdPath() {
        for (String p : List.of("/usr/sbin/sshd", "/usr/local/sbin/sshd")) {
            if (Files.isExecutable(Path.of(p))) {
                return Optional.of(Path.of(p));
            }
        }
        return findOnPath("sshd");
    }

    public static boolean isRoot() {
        try {
            Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
            return uid instanceof Integer i && i == 0;
        } catch (Exception e) {
            return "root".equals(System.getProperty("user.name"));
        }
    }

    /** The first executable named {@code name} on PATH. */
    public static Optional<Path> findOnPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** An executable on PATH, else in {@code /usr/local/bin} or {@code /usr/bin} (a test JVM's PATH may lack them). */
    public static Optional<Path> findExecutable(String name) {
        return findOnPath(name).or(() -> Stream.of("/usr/local/bin", "/usr/bin").map(d -> Path.of(d, name))
                .filter(Files::isExecutable).findFirst());
    }

    /** The real file of a shared library by file name (e.g. {@code libmpi.so.40}), searched under the usual library folders. */
    public static Optional<Path> findLibrary(String fileName) {
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
