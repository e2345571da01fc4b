package dev.jdist;

import dev.jdist.testing.PackageRules;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

/** jdist-djl's packages import only what docs/architecture.md allows ({@link PackageRules}). */
class PackageLayoutTest {

    @Test
    void everyPackageImportsOnlyWhatItMay() throws Exception {
        PackageRules.check(Path.of("target/classes"));
        PackageRules.checkPackageInfos(Path.of("src/main/java"));
    }
}
