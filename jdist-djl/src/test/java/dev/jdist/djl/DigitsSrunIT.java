package dev.jdist.djl;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.SlurmCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The unchanged digits program as 4 tasks of {@code srun} in a real one-node Slurm ({@link SlurmCluster}, as root):
 * {@code Distributed.init()} finds the job from Slurm's variables (docs/clusters.md); every rank reaches the accuracy
 * with bit-identical parameters.
 */
@Timeout(300)
class DigitsSrunIT {
    private static SlurmCluster slurm;

    @BeforeAll
    static void start() {
        DigitsRuns.requireData();
        slurm = SlurmCluster.start();
    }

    @AfterAll
    static void stop() {
        if (slurm != null) slurm.close();
    }

    @Test
    void srunTrainsTheDigitsOnFourTasksWithIdenticalParameters() {
        List<String> cmd = new ArrayList<>(List.of("srun", "-n", "4", "--kill-on-bad-exit=1"));
        cmd.addAll(DigitsRuns.training());
        CommandResult r = slurm.run(Duration.ofSeconds(240), null, Map.of("JDIST_TIMEOUT", "120"), cmd);
        assertThat(r.exitCode()).as("%s%n%s", r, slurm.logs()).isZero();
        assertThat(DigitsRuns.assertTrainedAlike(r.stdout(), 4)).isGreaterThanOrEqualTo(DigitsRuns.REQUIRED_ACCURACY);
    }
}
