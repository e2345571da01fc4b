package dev.jdist.djl;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The digits example (docs/djl.md) on 4 ranks under {@code jdist launch}: every rank reaches the accuracy and ends
 * with bit-identical parameters, and the 4-rank accuracy is that of one process; one rank under jdist equals plain
 * DJL without jdist bit for bit.
 */
@Timeout(300)
class DigitsLaunchIT {
    @TempDir
    Path dir;

    @BeforeAll
    static void data() {
        DigitsRuns.requireData();
    }

    @Test
    void fourRanksUnderJdistLaunchTrainToTheSingleProcessAccuracyWithIdenticalParameters() throws Exception {
        try (ChildProcesses p = new ChildProcesses()) {
            p.start(dir, "plain", DigitsRuns.training("--plain"), Map.of());
            p.start(dir, "one", DigitsRuns.training(), Map.of());
            assertThat(p.await(0, 120)).as(p.allOutputs()).isZero();
            assertThat(p.await(1, 120)).as(p.allOutputs()).isZero();
            p.start(dir, "launch", DigitsRuns.launch(4, FreePorts.block(4), DigitsRuns.training()), Map.of());
            assertThat(p.await(2, 240)).as(p.allOutputs()).isZero();

            DigitsRuns.RankLine plain = DigitsRuns.results(p.output(0), 1).get(0);
            DigitsRuns.RankLine one = DigitsRuns.results(p.output(1), 1).get(0);
            assertThat(one.crc()).as("one rank under jdist = plain DJL, bit for bit%n%s", p.allOutputs()).isEqualTo(plain.crc());
            assertThat(plain.accuracy()).isGreaterThanOrEqualTo(DigitsRuns.REQUIRED_ACCURACY);

            double four = DigitsRuns.assertTrainedAlike(p.output(2), 4);
            assertThat(four).as("4 ranks reach the single-process accuracy (%s) within 2 points", plain.accuracy())
                    .isGreaterThanOrEqualTo(plain.accuracy() - 0.02);
        }
    }
}
