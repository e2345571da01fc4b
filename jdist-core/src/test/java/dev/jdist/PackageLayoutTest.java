package dev.jdist;

import dev.jdist.testing.PackageRules;
import dev.jdist.testing.TestFiles;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** jdist-core's packages import only what docs/architecture.md allows ({@link PackageRules}), and the page shows that table. */
class PackageLayoutTest {

    @Test
    void everyPackageImportsOnlyWhatItMay() throws Exception {
        PackageRules.check(Path.of("target/classes"));
        PackageRules.checkPackageInfos(Path.of("src/main/java"));
    }

    @Test
    void architectureMdShowsTheTableTheTestsCheck() throws Exception {
        String page = Files.readString(TestFiles.repoRoot().resolve("docs/architecture.md"));
        assertThat(page).as("docs/architecture.md, \"Allowed imports\": paste PackageRules.markdownTable()")
                .contains(PackageRules.markdownTable());
    }
}
