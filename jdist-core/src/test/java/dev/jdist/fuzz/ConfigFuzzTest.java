package dev.jdist.fuzz;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * 10,000 mutated hostfiles, device files and environments through the ring, JACCL and nccl readers
 * (seeded, so a failure reproduces): no crash, no hang, no invalid input accepted, no valid one
 * rejected. {@code -Djdist.fuzz.cases=N -Djdist.fuzz.seed=S} change the run; bench/chaos/fuzz-config.sh
 * runs bigger counts.
 */
class ConfigFuzzTest {

    @Test
    @Timeout(300)
    void mutatedConfigurationNeverCrashesHangsOrIsAcceptedWhenInvalid(@TempDir Path dir) throws Exception {
        long cases = Long.getLong("jdist.fuzz.cases", 10_000);
        long seed = Long.getLong("jdist.fuzz.seed", 20_261_203L);
        ConfigFuzzer.Report r = new ConfigFuzzer(seed, dir, 10_000).run(cases);
        System.out.println("[ConfigFuzzTest] " + r.summary());
        r.findings().forEach(f -> System.out.println("[ConfigFuzzTest] " + f));
        assertThat(r.crashes()).as("crashes (anything but a ConfigException)\n%s", r.findings()).isZero();
        assertThat(r.hangs()).as("hangs").isZero();
        assertThat(r.acceptedInvalid()).as("invalid inputs accepted\n%s", r.findings()).isZero();
        assertThat(r.rejectedValid()).as("valid inputs rejected\n%s", r.findings()).isZero();
        assertThat(r.wrongNotConfigured()).as("'not configured' answered wrongly\n%s", r.findings()).isZero();
        // the mutations must leave enough valid input for "accepted" to mean something
        assertThat(r.verdicts().getOrDefault(ConfigOracle.Verdict.VALID, 0L)).isGreaterThan(cases / 20);
        assertThat(r.verdicts().getOrDefault(ConfigOracle.Verdict.INVALID, 0L)).isGreaterThan(cases / 5);
    }
}
