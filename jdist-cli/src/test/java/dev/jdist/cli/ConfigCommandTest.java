package dev.jdist.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Option parsing of {@code jdist config} (argparse-compatible errors), with a shell that records instead of connecting. */
@Timeout(30)
class ConfigCommandTest {

    final List<String> sent = new ArrayList<>();
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();
    final StringWriter usage = new StringWriter();

    int run(String... args) {
        CommandLine cl = JdistCommand.commandLine();
        cl.setErr(new PrintWriter(usage, true));
        ConfigCommand config = cl.getSubcommands().get("config").getCommand();
        config.out = new PrintStream(out, true, StandardCharsets.UTF_8);
        config.err = new PrintStream(err, true, StandardCharsets.UTF_8);
        config.in = new ByteArrayInputStream(new byte[0]);
        config.shell = new dev.jdist.config.RemoteShell() {
            @Override
            public Result run(String host, List<String> remoteArgs, Duration deadline) {
                sent.add(host + ": " + String.join(" ", remoteArgs));
                return remoteArgs.getFirst().equals("ipconfig")
                        ? new Result(0, "10.0.0.7\n", "", false) : new Result(0, "", "", false);
            }

            @Override
            public List<String> commandLine(String host, List<String> remoteArgs) {
                return List.of("ssh", host);
            }
        };
        List<String> argv = new ArrayList<>(List.of("config"));
        argv.addAll(List.of(args));
        return cl.execute(argv.toArray(String[]::new));
    }

    @Test
    void invalidChoicesUseArgparseWords() {
        assertThat(run("--over", "wifi")).isEqualTo(2);
        assertThat(usage.toString()).startsWith("usage: jdist config ")
                .contains("jdist config: error: argument --over: invalid choice: 'wifi' (choose from 'thunderbolt', 'ethernet')");
        assertThat(run("--backend", "mpi")).isEqualTo(2);
        assertThat(usage.toString()).contains("argument --backend: invalid choice: 'mpi' (choose from 'ring', 'jaccl', 'jaccl-ring')");
        assertThat(sent).isEmpty();
    }

    @Test
    void positionalTokensAreUnrecognized() {
        assertThat(run("--hosts", "a", "python", "x.py")).isEqualTo(2);
        assertThat(usage.toString()).contains("jdist config: error: unrecognized arguments: python x.py");
    }

    @Test
    void flagsTakeNoValue() {
        assertThat(run("--verbose=1", "--hosts", "a")).isEqualTo(2);
        assertThat(run("--dot=true", "--hosts", "a")).isEqualTo(2);
        assertThat(sent).isEmpty();
    }

    @Test
    void ambiguousPrefixNamesTheCandidates() {
        assertThat(run("--host", "a")).isEqualTo(2);
        assertThat(usage.toString()).contains("ambiguous option: --host could match --hosts, --hostfile");
    }

    @Test
    void emptyHostnameAndMissingHostfileAreUsageErrors(@TempDir Path dir) {
        assertThat(run("--hosts", "a,,b")).isEqualTo(2);
        assertThat(usage.toString()).contains("Hostname cannot be empty");
        assertThat(run("--hostfile", dir.resolve("none.json").toString())).isEqualTo(2);
        assertThat(usage.toString()).contains("Hostfile " + dir.resolve("none.json") + " doesn't exist");
    }

    @Test
    void outputAbbreviationWritesTheHostfile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("h.json");
        assertThat(run("--over", "ethernet", "--hosts", "10.9.9.9,b", "--output", file.toString(), "--env", "A=1")).isZero();
        assertThat(Files.readString(file)).contains("\"10.9.9.9\",\n                \"10.0.0.7\"").contains("\"A=1\"");
        assertThat(sent).contains("10.9.9.9: echo success", "10.9.9.9: sudo ls", "b: ipconfig getifaddr en0");
    }

    @Test
    void hostfileHostsKeepTheirAddresses(@TempDir Path dir) throws Exception {
        Path in = dir.resolve("in.json");
        Files.writeString(in, "{\"backend\": \"mpi\", \"envs\": [\"X=1\"], \"hosts\": [{\"ssh\": \"n1\", \"ips\": [\"10.1.1.1\"]}]}");
        Path file = dir.resolve("h.json");
        assertThat(run("--over", "ethernet", "--hostfile", in.toString(), "--hosts", "ignored", "--output-hostfile",
                file.toString())).isZero();
        assertThat(Files.readString(file)).contains("\"envs\": []", "\"ssh\": \"n1\"", "\"10.1.1.1\",\n                \"10.0.0.7\"");
    }

    @Test
    void theLastOfAutoSetupAndNoAutoSetupWins() {
        assertThat(run("--over", "ethernet", "--auto-setup", "--no-auto-setup", "--hosts", "a")).isZero();
        assertThat(err.toString(StandardCharsets.UTF_8)).doesNotContain("--auto-setup only apply");
        assertThat(run("--over", "ethernet", "--no-auto-setup", "--auto-setup", "--hosts", "a")).isZero();
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--auto-setup only apply to --over thunderbolt");
    }

    @Test
    void helpListsTheOptions() {
        CommandLine cl = JdistCommand.commandLine();
        StringWriter help = new StringWriter();
        cl.setOut(new PrintWriter(help, true));
        assertThat(cl.execute("config", "--help")).isZero();
        assertThat(help.toString()).contains("--hosts", "--over", "--backend", "--[no-]auto-setup", "--dot",
                "--output-hostfile", "--env", "--ignore-unreachable", "--platform", "--verbose");
    }
}
