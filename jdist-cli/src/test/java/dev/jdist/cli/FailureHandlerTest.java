package dev.jdist.cli;

import dev.jdist.console.CliFailure;
import dev.jdist.launch.LaunchArguments;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.Callable;

import static org.assertj.core.api.Assertions.assertThat;

/** How every command prints a {@link CliFailure}: the lines and exit codes scripts see. */
@Timeout(30)
class FailureHandlerTest {
    final StringWriter err = new StringWriter();

    int run(CommandLine cl, String... args) {
        cl.setErr(new PrintWriter(err, true));
        cl.setOut(new PrintWriter(new StringWriter(), true));
        return cl.execute(args);
    }

    @Test
    void launchUsageErrorsFollowMlxUsageLine() {
        assertThat(run(JdistCommand.commandLine(), "launch", "--hosts", "a,,b", "X.java")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo(LaunchArguments.USAGE + "\njdist launch: error: Hostname cannot be empty in --hosts "
                + "'a,,b'; write host names or IPs separated by single commas, e.g. --hosts 10.0.0.1,10.0.0.2\n");
    }

    @Test
    void configUsageErrorsFollowPicocliSynopsis() {
        assertThat(run(JdistCommand.commandLine(), "config", "--platform", "bsd")).isEqualTo(2);
        assertThat(err.toString()).startsWith("usage: jdist config [-h] [--[no-]auto-setup]")
                .endsWith("]...\njdist config: error: argument --platform: invalid choice: 'bsd' (choose from 'macos', 'linux')\n");
    }

    @Test
    void doctorAndBenchPrintTheErrorLineAlone() {
        assertThat(run(JdistCommand.commandLine(), "doctor", "--hosts", "a,,b")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("jdist doctor: error: Hostname cannot be empty in --hosts 'a,,b'; write host names "
                + "or IPs separated by single commas, e.g. --hosts 10.0.0.1,10.0.0.2\n");
        err.getBuffer().setLength(0);
        assertThat(run(JdistCommand.commandLine(), "bench", "--iters", "0")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("jdist bench: error: --iters must be at least 1, got 0\n");
    }

    @Command(name = "mlx-like")
    static final class MlxLike implements Callable<Integer>, MlxCounterpart {
        @Override
        public Integer call() {
            throw CliFailure.of(3, "first", "");
        }

        @Override
        public String usageLine(CommandLine self) {
            return "usage: mlx-like";
        }
    }

    @Command(name = "own")
    static final class Own implements Callable<Integer> {
        @Override
        public Integer call() {
            throw CliFailure.of(4, "the job failed", "see above");
        }
    }

    @Command(name = "jdist", subcommands = {MlxLike.class, Own.class})
    static final class Root {
    }

    static CommandLine root() {
        FailureHandler handler = new FailureHandler();
        return new CommandLine(new Root()).setExecutionExceptionHandler(handler).setParameterExceptionHandler(handler);
    }

    @Test
    void otherFailuresAreErrorLinesOrPrefixedLines() {
        assertThat(run(root(), "mlx-like")).isEqualTo(3);
        assertThat(err.toString().replaceAll("\u001b\\[[0-9]*m", "")).isEqualTo("[ERROR] first \n[ERROR]  \n");
        err.getBuffer().setLength(0);
        assertThat(run(root(), "own")).isEqualTo(4);
        assertThat(err.toString()).isEqualTo("jdist own: the job failed\njdist own: see above\n");
    }
}
