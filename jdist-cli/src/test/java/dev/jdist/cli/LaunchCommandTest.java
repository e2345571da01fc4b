package dev.jdist.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code jdist help launch} shows every launcher option (the same text as {@code jdist launch --help}). */
class LaunchCommandTest {
    @Test
    void helpLaunchListsEveryOption() {
        CommandLine cl = JdistCommand.commandLine();
        StringWriter out = new StringWriter();
        cl.setOut(new PrintWriter(out));
        assertThat(cl.execute("help", "launch")).isZero();
        assertThat(out.toString()).contains("jdist launch [options] [--] COMMAND [ARGS...]")
                .contains("--hostfile=FILE").contains("-n, --repeat-hosts=N").contains("--print-java")
                .contains("--tag-output").contains("--mlx-compatible").contains("docs/launching.md");
        assertThat(cl.getSubcommands()).containsKey("launch");
    }
}
