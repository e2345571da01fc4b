package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The job-target and rank options launch, bench and doctor share: defaults, conversions, hosts, backend choice. */
class JobTargetOptionsTest {

    @Command(name = "job")
    static final class Job {
        @Mixin
        JobTargetOptions target = new JobTargetOptions();
        @Mixin
        RankOptions ranks = new RankOptions();
    }

    static Job parse(String... args) {
        Job job = new Job();
        new CommandLine(job).parseArgs(args);
        return job;
    }

    @Test
    void theDefaultsAreLaunchDefaults() {
        Job job = parse();
        assertThat(job.target.repeat()).isEqualTo(1);
        assertThat(job.target.connectionsPerIp()).isEqualTo(1);
        assertThat(job.target.startingPort()).isEqualTo(32323);
        assertThat(job.target.resolveHosts()).isEqualTo(new Hostfile("", List.of(), List.of(new HostEntry("127.0.0.1", List.of("127.0.0.1")))));
        assertThat(job.ranks.bindToCore()).isFalse();
        assertThat(job.ranks.env).isEmpty();
        assertThat(JobTargetOptions.withRanksPerHost(2).repeat()).isEqualTo(2);
    }

    @Test
    void numbersAreConvertedWithMlxMessages() {
        assertThatThrownBy(() -> parse("-n", "0").target.repeat()).isInstanceOf(CliFailure.class)
                .hasMessage("argument --repeat-hosts/-n: invalid positive_number value: '0' (give a whole number >= 1, e.g. -n 4)");
        assertThatThrownBy(() -> parse("-p", "x").target.startingPort()).isInstanceOf(CliFailure.class)
                .hasMessage("argument --starting-port/-p: invalid int value: 'x' (give a whole number)");
        assertThatThrownBy(() -> parse("--connections-per-ip", "1.5").target.connectionsPerIp())
                .hasMessage("argument --connections-per-ip: invalid int value: '1.5' (give a whole number)");
        assertThatThrownBy(() -> parse("--bind-to", "socket").ranks.bindToCore()).isInstanceOf(CliFailure.class)
                .hasMessage("--bind-to must be none or core, got 'socket'");
        assertThat(parse("--bind-to", "core").ranks.bindToCore()).isTrue();
    }

    @Test
    void hostsRepeatAndAHostfileWinsOverHosts(@TempDir Path dir) throws Exception {
        assertThat(parse("--hosts", "a,10.0.0.2", "-n", "2").target.resolveHosts().hosts()).extracting(HostEntry::ssh)
                .containsExactly("a", "a", "10.0.0.2", "10.0.0.2");
        Path file = Files.writeString(dir.resolve("h.json"), "{\"backend\": \"mpi\", \"envs\": [\"A=1\"], \"hosts\": [{\"ssh\": \"n1\"}]}");
        Hostfile hf = parse("--hosts", "ignored", "-n", "3", "--hostfile", file.toString()).target.resolveHosts();
        assertThat(hf.hosts()).extracting(HostEntry::ssh).containsExactly("n1");
        assertThat(hf.backend()).isEqualTo("mpi");
        assertThat(hf.envs()).containsExactly("A=1");
    }

    @Test
    void theBackendIsTheOptionThenTheHostfilesThenTheEnvironments() {
        Hostfile jaccl = new Hostfile("jaccl", List.of(), List.of(new HostEntry("a", List.of())));
        Hostfile none = new Hostfile("", List.of(), List.of(new HostEntry("a", List.of())));
        assertThat(parse("--backend", "mpi").target.chooseBackend(jaccl, Map.of("JDIST_LAUNCH_BACKEND", "ring"))).isEqualTo("mpi");
        assertThat(parse().target.chooseBackend(jaccl, Map.of("JDIST_LAUNCH_BACKEND", "ring"))).isEqualTo("jaccl");
        assertThat(parse().target.chooseBackend(none, Map.of("JDIST_LAUNCH_BACKEND", "jaccl-ring"))).isEqualTo("jaccl-ring");
        assertThatThrownBy(() -> parse("--backend", "tcp").target.chooseBackend(none, Map.of())).isInstanceOf(CliFailure.class)
                .hasMessage(EnvironmentPlan.BACKEND_ERROR + ", not 'tcp'");
    }

    @Test
    void asLaunchArgumentsGivesLaunchTheSameJob() {
        Job job = parse("--hosts", "a,b", "-n", "3", "--backend", "ring", "-p", "4000", "--connections-per-ip", "2",
                "--env", "A=1", "--env", "B=2", "--bind-to", "core");
        List<String> args = new java.util.ArrayList<>(job.target.asLaunchArguments());
        args.addAll(job.ranks.asLaunchArguments());
        args.add("x");
        LaunchArguments.Parsed p = LaunchArguments.parse(args);
        assertThat(p.options().target.hosts).isEqualTo("a,b");
        assertThat(p.repeat()).isEqualTo(3);
        assertThat(p.options().target.backend).isEqualTo("ring");
        assertThat(p.startingPort()).isEqualTo(4000);
        assertThat(p.connectionsPerIp()).isEqualTo(2);
        assertThat(p.options().ranks.env).containsExactly("A=1", "B=2");
        assertThat(p.options().ranks.bindTo).isEqualTo("core");
        assertThat(parse("--hostfile", "h.json").target.asLaunchArguments()).containsSubsequence("--hostfile", "h.json")
                .doesNotContain("--hosts", "--backend");
    }
}
