package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/reference/launcher.md §1.3: MLX's argument rules. */
class LaunchArgumentsTest {

    private static LaunchArguments.Parsed parse(String... args) {
        return LaunchArguments.parse(List.of(args));
    }

    @Test
    void optionsAfterTheCommandAreTheLaunchersAndLastValueWins() {
        var p = parse("-n", "2", "python", "train.py", "-n", "3", "--verbose");
        assertThat(p.repeat()).isEqualTo(3);
        assertThat(p.options().verbose).isTrue();
        assertThat(p.command()).containsExactly("python", "train.py");
    }

    @Test
    void doubleDashEndsOptionScanningAndIsDroppedOnlyAsTheFirstCommandToken() {
        assertThat(parse("-n", "2", "--", "python", "x.py", "-n", "5", "--help").command())
                .containsExactly("python", "x.py", "-n", "5", "--help");
        assertThat(parse("-n", "2", "--", "python", "x.py", "-n", "5").repeat()).isEqualTo(2);
        assertThat(parse("a", "--", "b").command()).containsExactly("a", "--", "b");
        assertThat(parse("a", "--", "b", "--", "c").command()).containsExactly("a", "--", "b", "--", "c");
        assertThat(parse("--").command()).isEmpty();
    }

    @Test
    void unknownOptionsAreCommandTokens() {
        var p = parse("python", "train.py", "--model", "x", "-v", "-m", "mod", "--model=y");
        assertThat(p.command()).containsExactly("python", "train.py", "--model", "x", "-v", "-m", "mod", "--model=y");
    }

    @Test
    void shortOptionsTakeAttachedValues() {
        var p = parse("-n2", "-p5000", "x");
        assertThat(p.repeat()).isEqualTo(2);
        assertThat(p.startingPort()).isEqualTo(5000);
        assertThat(parse("-n=3", "x").repeat()).isEqualTo(3);
        assertThat(parse("--repeat-hosts=4", "x").repeat()).isEqualTo(4);
        assertThat(parse("-p", "-5", "x").startingPort()).isEqualTo(-5);
    }

    @Test
    void npIsMinusNWithValueP() {
        assertThatThrownBy(() -> parse("-np", "2", "x"))
                .isInstanceOf(CliFailure.class)
                .hasMessageContaining("argument --repeat-hosts/-n: invalid positive_number value: 'p'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-1", "x", "1.5", ""})
    void repeatMustBeAPositiveInteger(String v) {
        assertThatThrownBy(() -> parse("-n", v, "x"))
                .hasMessageContaining("argument --repeat-hosts/-n: invalid positive_number value: '" + v + "'");
    }

    @Test
    void otherIntegersGiveInvalidIntValue() {
        assertThatThrownBy(() -> parse("--connections-per-ip", "two", "x"))
                .hasMessageContaining("argument --connections-per-ip: invalid int value: 'two'");
        assertThatThrownBy(() -> parse("-p", "x1", "x")).hasMessageContaining("invalid int value: 'x1'");
        assertThatThrownBy(() -> parse("--nccl-port", "1e3", "x")).hasMessageContaining("argument --nccl-port: invalid int value: '1e3'");
    }

    @Test
    void unambiguousPrefixesAreAccepted() {
        var p = parse("--verb", "--hostf=h.json", "--conn", "2", "--class", "cp", "Main");
        assertThat(p.options().verbose).isTrue();
        assertThat(p.options().target.hostfile).isEqualTo("h.json");
        assertThat(p.connectionsPerIp()).isEqualTo(2);
        assertThat(p.options().classPath).isEqualTo("cp");
        assertThat(p.command()).containsExactly("Main");
        assertThat(parse("--hosts", "a", "x").options().target.hosts).isEqualTo("a"); // exact name wins over --hostfile
    }

    @ParameterizedTest
    @CsvSource({"--host,'--hosts, --hostfile'", "--print,'--print-python, --print-java'", "--p,--python"})
    void ambiguousPrefixesAreUsageErrors(String opt, String candidates) {
        assertThatThrownBy(() -> parse(opt, "v", "x"))
                .isInstanceOf(CliFailure.class)
                .hasMessageContaining("ambiguous option: " + opt + " could match ")
                .hasMessageContaining(candidates);
    }

    @Test
    void theTokenAfterAValueOptionIsAlwaysItsValue() {
        var p = parse("--mpi-arg", "--allow-run-as-root", "--env", "-n", "--java-opt", "-Xmx1g", "x");
        assertThat(p.options().mpiArg).containsExactly("--allow-run-as-root");
        assertThat(p.options().ranks.env).containsExactly("-n");
        assertThat(p.options().javaOpt).containsExactly("-Xmx1g");
        assertThat(p.command()).containsExactly("x");
    }

    @Test
    void repeatableOptionsAccumulateInOrder() {
        var p = parse("--env", "A=1", "x", "--env", "B=2", "--env=A=3");
        assertThat(p.options().ranks.env).containsExactly("A=1", "B=2", "A=3");
    }

    @Test
    void flagsTakeNoValue() {
        assertThatThrownBy(() -> parse("--verbose=1", "x")).isInstanceOf(CliFailure.class)
                .hasMessageContaining("--verbose").hasMessageContaining("'1'");
    }

    @Test
    void helpAnywhereBeforeDoubleDash() {
        assertThat(parse("python", "x.py", "--help").help()).isTrue();
        assertThat(parse("-h").help()).isTrue();
        assertThat(parse("--", "python", "x.py", "--help").help()).isFalse();
    }

    @Test
    void valueMissingAtTheEnd() {
        assertThatThrownBy(() -> parse("x", "--hosts")).hasMessageContaining("argument --hosts: expected one argument");
        assertThatThrownBy(() -> parse("x", "-n")).hasMessageContaining("expected one argument");
    }

    @Test
    void defaults() {
        var p = parse("x");
        assertThat(p.options().target.hosts).isEqualTo("127.0.0.1");
        assertThat(p.repeat()).isEqualTo(1);
        assertThat(p.startingPort()).isEqualTo(32323);
        assertThat(p.ncclPort()).isEqualTo(12345);
        assertThat(p.connectionsPerIp()).isEqualTo(1);
        assertThat(p.timeoutSeconds()).isNull();
    }

    @Test
    void timeoutMustBePositive() {
        assertThat(parse("--timeout", "2.5", "x").timeoutSeconds()).isEqualTo(2.5);
        assertThatThrownBy(() -> parse("--timeout", "0", "x")).hasMessageContaining("--timeout");
        assertThatThrownBy(() -> parse("--timeout", "soon", "x")).hasMessageContaining("'soon'");
    }
}
