package dev.jdist.launch;

import dev.jdist.spi.Backend;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The examples as users run them: {@code jdist launch -n N examples/X.java} (source-file mode,
 * local ranks over the ring). The numerical checks with 1, 2 and 4 ranks are in jdist-core's
 * {@code ExamplesIT}; this test proves the launcher path works for each example.
 */
@Timeout(600)
class ExamplesLaunchIT {
    static Path root;

    @BeforeAll
    static void locate() {
        root = JdistCli.repoRoot();
        assertThat(JdistCli.JAR).as("the shaded jar (built by the package phase)").exists();
        boolean ring = ServiceLoader.load(Backend.class).stream().anyMatch(p -> p.get().name().equals("ring"));
        assertThat(ring).as("the ring backend is registered (META-INF/services/dev.jdist.spi.Backend)").isTrue();
    }

    private static CommandResult launch(int n, String example) throws IOException {
        CommandResult r = JdistCli.run(Duration.ofSeconds(400), root, Map.of(), null,
                "launch", "-n", String.valueOf(n), "--starting-port", String.valueOf(FreePorts.block(n)), "examples/" + example);
        assertThat(r.timedOut()).as("launch timed out; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isFalse();
        assertThat(r.exitCode()).as("launch exit status; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
        return r;
    }

    @Test
    void dataParallelOnTwoRanksEndsWithIdenticalWeights() throws IOException {
        CommandResult r = launch(2, "DataParallel.java");
        Matcher m = Pattern.compile("rank (\\d) of 2: weights crc32=([0-9a-f]{8})").matcher(r.stdout());
        List<String> crcs = new ArrayList<>();
        while (m.find()) crcs.add(m.group(2));
        assertThat(crcs).as(r.stdout()).hasSize(2);
        assertThat(crcs.get(0)).isEqualTo(crcs.get(1));
        assertThat(r.stdout()).contains("weights identical on all 2 ranks").containsPattern("loss [0-9.]+ after 200 iterations");
    }

    @Test
    void tensorParallelOnFourRanksMatchesTheUnshardedModel() throws IOException {
        CommandResult r = launch(4, "TensorParallel.java");
        Matcher m = Pattern.compile("rank (\\d) of 4: max \\|y - expected\\| = (\\S+)").matcher(r.stdout());
        int ranks = 0;
        while (m.find()) {
            ranks++;
            assertThat(Double.parseDouble(m.group(2))).isLessThanOrEqualTo(1e-5);
        }
        assertThat(ranks).as(r.stdout()).isEqualTo(4);
        assertThat(r.stdout()).contains("4 ranks x 256 hidden features");
    }

    @Test
    void mixtureOfExpertsOnFourRanksMatchesTheSingleProcessRunOnEveryRank() throws IOException {
        CommandResult r = launch(4, "MixtureOfExperts.java");
        Matcher m = Pattern.compile("rank (\\d) of 4: experts (\\d)-(\\d), (\\d+) of 96 tokens to other ranks, "
                + "max \\|y - single process\\| = (\\S+)").matcher(r.stdout());
        List<Integer> ranks = new ArrayList<>();
        while (m.find()) {
            ranks.add(Integer.parseInt(m.group(1)));
            assertThat(Integer.parseInt(m.group(2))).as("rank %s's first expert", m.group(1)).isEqualTo(2 * Integer.parseInt(m.group(1)));
            assertThat(Integer.parseInt(m.group(4))).as("rank %s sends tokens to other ranks", m.group(1)).isPositive();
            assertThat(Double.parseDouble(m.group(5))).as("rank %s's max error", m.group(1)).isLessThanOrEqualTo(1e-5);
        }
        assertThat(ranks).as(r.stdout()).containsExactlyInAnyOrder(0, 1, 2, 3);
        assertThat(r.stdout()).contains("expert-parallel output equals the single-process output on all 4 ranks")
                .containsPattern("tokens per expert over all ranks: \\[[0-9, ]+\\]; 4 ranks x 96 tokens");
    }

    @Test
    void allSumOnThreeRanksPrintsThreeOnEveryRank() throws IOException {
        CommandResult r = launch(3, "AllSum.java");
        for (int rank = 0; rank < 3; rank++) {
            assertThat(r.stdout()).contains(rank + " array([3, 3, 3, ..., 3, 3, 3], dtype=float32)");
        }
    }
}
