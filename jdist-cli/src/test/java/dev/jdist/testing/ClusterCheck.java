package dev.jdist.testing;

import dev.jdist.rendezvous.ClusterCheckProgram;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The one program every cluster test runs as its ranks ({@link ClusterCheckProgram}, from jdist-core's test classes:
 * {@code Distributed.init()}, then all_sum, all_gather, sum_scatter and send/recv checked on the rank), as a java
 * command line with the built jar, and the checks of what it prints.
 */
public final class ClusterCheck {
    private ClusterCheck() {}

    /** Where ClusterCheckProgram's class is (jdist-core's test classes or test jar). */
    public static String classPath() {
        try {
            return Path.of(ClusterCheckProgram.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code java <jdist's flags> -cp jdist.jar:<check program> dev.jdist.rendezvous.ClusterCheckProgram}. */
    public static List<String> command() {
        JdistCli.argv(List.of()); // fails with a clear message when the jar was not built
        return JavaCommand.command(JdistCli.JAR + ":" + classPath(), List.of("-Xmx256m"), mainClass());
    }

    public static String mainClass() {
        return ClusterCheckProgram.class.getName();
    }

    /** Every rank 0..n-1 printed its OK line with the backend and the job source; none printed WRONG or FAILED. */
    public static void assertEveryRankOk(String output, int n, String backend, String source) {
        for (int r = 0; r < n; r++) {
            assertThat(output).as("output of the job:%n%s", output)
                    .contains("rank " + r + " of " + n + ": OK (backend " + backend + ", source " + source + ")");
        }
        assertThat(output).as("output of the job:%n%s", output).doesNotContain("WRONG").doesNotContain("FAILED");
    }

    /** Rank r's line with the address every rank published, e.g. {@code 10.0.0.1,10.0.0.2}. */
    public static void assertTable(String output, int rank, List<String> addresses) {
        assertThat(output).as("output of the job:%n%s", output).contains("rank " + rank + " table: " + String.join(",", addresses) + "\n");
    }
}
