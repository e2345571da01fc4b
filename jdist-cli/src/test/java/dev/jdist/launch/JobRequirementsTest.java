package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What doctor checks is what launch would use: hosts, java, jdist's class path, ring addresses. */
class JobRequirementsTest {

    static JobTargetOptions target(String... args) {
        return JobTargetOptionsTest.parse(args).target;
    }

    @Test
    void ringJobsNeedTheirAddressesFree() {
        JobRequirements job = JobRequirements.of(target("--hosts", "10.0.0.1,10.0.0.2", "-n", "2", "-p", "5000",
                "--backend", "ring"), null, Map.of());
        assertThat(job.hosts()).hasSize(4);
        assertThat(job.backend()).isEqualTo("ring");
        assertThat(job.ringAddresses()).containsExactly(List.of("10.0.0.1:5000"), List.of("10.0.0.1:5001"),
                List.of("10.0.0.2:5002"), List.of("10.0.0.2:5003"));
        assertThat(job.java()).isEqualTo(CommandResolver.javaPath(null));
        assertThat(job.jdistClassPath()).isEqualTo(CommandResolver.jdistClassPath());
        assertThat(Path.of(job.ssh()).getFileName().toString()).isEqualTo("ssh");
    }

    @Test
    void otherBackendsHaveNoRingAddressesAndBadValuesAreUsageErrors() {
        assertThat(JobRequirements.of(target("--backend", "mpi"), "/opt/java", Map.of()).ringAddresses()).isEmpty();
        assertThat(JobRequirements.of(target("--backend", "mpi"), "/opt/java", Map.of()).java()).isEqualTo("/opt/java");
        assertThatThrownBy(() -> JobRequirements.of(target("--connections-per-ip", "0"), null, Map.of("JDIST_LAUNCH_BACKEND", "ring")))
                .isInstanceOf(CliFailure.class).hasMessage("--connections-per-ip must be at least 1");
        assertThatThrownBy(() -> JobRequirements.of(target("--hosts", "a,"), null, Map.of()))
                .isInstanceOf(CliFailure.class).hasMessageContaining("Hostname cannot be empty");
    }
}
