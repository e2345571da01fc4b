package dev.jdist.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code jdist help launch} shows every launcher option (the same text as {@code jdist launch --help}). */
class LaunchCommandTest {
    static String helpLaunch() {
        CommandLine cl = JdistCommand.commandLine();
        StringWriter out = new StringWriter();
        cl.setOut(new PrintWriter(out));
        assertThat(cl.execute("help", "launch")).isZero();
        assertThat(cl.getSubcommands()).containsKey("launch");
        return out.toString();
    }

    @Test
    void helpLaunchListsEveryOption() {
        assertThat(helpLaunch()).contains("jdist launch [options] [--] COMMAND [ARGS...]")
                .contains("--hostfile=FILE").contains("-n, --repeat-hosts=N").contains("--print-java")
                .contains("--tag-output").contains("--mlx-compatible").contains("docs/launching.md");
    }

    @Test
    void launchHelpListsTheSharedOptionsInTheirPlaces() {
        String help = helpLaunch();
        String[] order = {"--hosts=", "--repeat-hosts=", "--hostfile=", "--backend=", "--env=", "--mpi-arg=",
                "--connections-per-ip=", "--starting-port=", "--nccl-port=", "--cwd=", "--verbose", "--python=",
                "--print-python", "--java=", "--print-java", "--class-path=", "--java-opt=", "--tag-output",
                "--timestamp-output", "--output-dir=", "--timeout=", "--bind-to=", "--dry-run", "--mlx-compatible", "--help"};
        int at = 0;
        for (String option : order) {
            int next = help.indexOf(option, at);
            assertThat(next).as(option + " after the option before it").isGreaterThan(at);
            at = next;
        }
        assertThat(help).contains("-n, --repeat-hosts=N       Ranks per --hosts entry, consecutive (default: 1).");
    }
}
