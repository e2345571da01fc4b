package dev.jdist.testing;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;

/**
 * Which jdist packages each package may import (docs/architecture.md, "Allowed imports"): the one copy of that table.
 * Each module's {@code PackageLayoutTest} checks its own main classes against it with ArchUnit ({@link #check}) and
 * that each package's {@code package-info.java} says the same ({@link #checkPackageInfos}); jdist-core's also checks
 * that architecture.md shows exactly {@link #markdownTable()}, so the page, the package docs and the rule cannot drift. The table is Java rather than read from the page so that no markdown is parsed and a typo fails to compile.
 *
 * <p>A name in "may import" is a package under {@code dev.jdist} ({@code "spi"} is {@code dev.jdist.spi}); {@code ROOT}
 * is {@code dev.jdist} itself. A package may always use its own classes, the JDK and its module's libraries.
 */
public final class PackageRules {
    private PackageRules() {}

    /** {@code dev.jdist}: the API a user imports. */
    public static final String ROOT = "dev.jdist";

    /** One row: a package, its module, and the jdist packages it may import. */
    public record Row(String pkg, String module, List<String> mayImport) {}

    private static Row row(String pkg, String module, String... mayImport) {
        return new Row(pkg.equals(ROOT) ? ROOT : ROOT + "." + pkg, module, List.of(mayImport));
    }

    /** The table, in the order docs/architecture.md shows it. */
    public static final List<Row> ROWS = List.of(
            row(ROOT, "jdist-core", "spi", "flight", "cluster", "rendezvous", "liveness", "memory"),
            row("spi", "jdist-core", ROOT, "algo"),
            row("flight", "jdist-core", ROOT),
            row("cluster", "jdist-core", ROOT, "spi"),
            row("rendezvous", "jdist-core", ROOT, "spi", "cluster"),
            row("liveness", "jdist-core", ROOT, "spi"),
            row("reduce", "jdist-core", ROOT),
            row("memory", "jdist-core", ROOT),
            row("shm", "jdist-core"),
            row("connect", "jdist-core"),
            row("algo", "jdist-core", ROOT),
            row("mesh", "jdist-core", ROOT, "spi", "reduce", "algo", "shm", "connect"),
            row("ring", "jdist-core", ROOT, "spi", "reduce", "algo", "mesh", "shm", "connect", "cluster"),
            row("jaccl", "jdist-core", ROOT, "spi", "reduce", "algo"),
            row("mpi", "jdist-core", ROOT, "spi", "reduce", "flight"),
            row("nccl", "jdist-core", ROOT, "spi"),
            row("nn", "jdist-core", ROOT, "reduce"),
            row("checkpoint", "jdist-core", ROOT),
            row("cli", "jdist-cli", ROOT, "algo", "flight", "console", "hosts", "launch", "config", "bench", "doctor"),
            row("console", "jdist-cli"),
            row("hosts", "jdist-cli", ROOT, "spi", "console"),
            row("launch", "jdist-cli", ROOT, "spi", "flight", "rendezvous", "mpi", "console", "hosts"),
            row("doctor", "jdist-cli", ROOT, "spi", "cluster", "rendezvous", "hosts", "launch"),
            row("config", "jdist-cli", "console", "hosts"),
            row("bench", "jdist-cli", ROOT, "spi", "algo", "console"),
            row("spark", "jdist-spark", ROOT, "spi"),
            row("spark.examples", "jdist-spark", ROOT, "nn", "spark"),
            row("djl", "jdist-djl", ROOT),
            row("djl.examples", "jdist-djl", ROOT, "djl"));

    private static final Map<String, Row> BY_PACKAGE =
            ROWS.stream().collect(Collectors.toMap(Row::pkg, r -> r, (a, b) -> a, LinkedHashMap::new));

    /** The table as docs/architecture.md shows it. */
    public static String markdownTable() {
        StringBuilder sb = new StringBuilder("| package | module | may import (besides itself, the JDK and its module's libraries) |\n")
                .append("|---------|--------|------------------------------------------------------------------|\n");
        for (Row r : ROWS) {
            String imports = r.mayImport().isEmpty() ? "nothing of jdist"
                    : r.mayImport().stream().map(p -> "`" + p + "`").collect(Collectors.joining(", "));
            sb.append("| `").append(r.pkg()).append("` | ").append(r.module()).append(" | ").append(imports).append(" |\n");
        }
        return sb.toString();
    }

    /** The line of a package's {@code package-info.java} that says what it may import, as the table says it. */
    public static String importsLine(String pkg) {
        Row r = BY_PACKAGE.get(pkg);
        if (r == null) throw new IllegalArgumentException(pkg + " has no row in PackageRules.ROWS");
        String imports = r.mayImport().isEmpty() ? "nothing of jdist"
                : r.mayImport().stream().map(p -> p.equals(ROOT) ? ROOT : ROOT + "." + p).collect(Collectors.joining(", "));
        return " * <p>May import (docs/architecture.md, \"Allowed imports\"): " + imports + ".";
    }

    /**
     * Checks that every package with sources under {@code sourceRoot} (a module's {@code src/main/java}) has a
     * {@code package-info.java} holding its {@link #importsLine}.
     */
    public static void checkPackageInfos(Path sourceRoot) throws IOException {
        List<String> problems = new ArrayList<>();
        try (Stream<Path> files = Files.walk(sourceRoot)) {
            for (Path dir : files.filter(f -> f.toString().endsWith(".java")).map(Path::getParent).distinct().sorted().toList()) {
                String pkg = sourceRoot.relativize(dir).toString().replace(java.io.File.separatorChar, '.');
                Path info = dir.resolve("package-info.java");
                if (!BY_PACKAGE.containsKey(pkg)) {
                    problems.add(pkg + " has no row in PackageRules.ROWS");
                } else if (!Files.exists(info)) {
                    problems.add(info + " is missing: say what " + pkg + " owns, and " + importsLine(pkg).substring(3));
                } else if (!Files.readString(info).contains(importsLine(pkg) + "\n")) {
                    problems.add(info + " should hold the line\n" + importsLine(pkg));
                }
            }
        }
        if (!problems.isEmpty()) throw new AssertionError(String.join("\n", problems));
    }

    /**
     * Checks every class under {@code classesDir} (a module's {@code target/classes}): its package has a row, and
     * whatever it uses of another jdist package (a type, a call, a field, an annotation) is in the row's list. Read from
     * class files: a compile-time constant of another package, which the compiler copies in, is not seen.
     */
    public static void check(Path classesDir) {
        if (!Files.isDirectory(classesDir)) throw new IllegalStateException(classesDir.toAbsolutePath() + " does not exist: compile first");
        JavaClasses imported = new ClassFileImporter().importPath(classesDir);
        if (imported.isEmpty()) throw new IllegalStateException("no classes under " + classesDir.toAbsolutePath());
        classes().should(importOnlyAllowedPackages()).check(imported);
    }

    private static ArchCondition<JavaClass> importOnlyAllowedPackages() {
        return new ArchCondition<>("use only the jdist packages docs/architecture.md (\"Allowed imports\", PackageRules) allows") {
            @Override
            public void check(JavaClass c, ConditionEvents events) {
                Row row = BY_PACKAGE.get(c.getPackageName());
                if (row == null) {
                    events.add(SimpleConditionEvent.violated(c, c.getName() + " is in package " + c.getPackageName()
                            + ", which has no row: add one to PackageRules.ROWS and docs/architecture.md"));
                    return;
                }
                for (Dependency d : c.getDirectDependenciesFromSelf()) {
                    String target = d.getTargetClass().getPackageName();
                    if (!isJdist(target) || target.equals(row.pkg()) || allows(row, target)) continue;
                    events.add(SimpleConditionEvent.violated(d, d.getDescription() + ": " + row.pkg() + " may not import "
                            + target + " (docs/architecture.md, \"Allowed imports\")"));
                }
            }
        };
    }

    private static boolean isJdist(String pkg) {
        return pkg.equals(ROOT) || pkg.startsWith(ROOT + ".");
    }

    private static boolean allows(Row row, String target) {
        for (String p : row.mayImport()) {
            if (target.equals(p.equals(ROOT) ? ROOT : ROOT + "." + p)) return true;
        }
        return false;
    }
}
