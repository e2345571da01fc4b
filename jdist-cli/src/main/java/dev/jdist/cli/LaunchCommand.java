package dev.jdist.cli;

import dev.jdist.launch.Launcher;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code jdist launch}: MLX-compatible launcher. The options follow MLX's parsing rules (options may follow the
 * command, unknown options belong to the command, {@code --} ends options), so this command takes its arguments
 * raw and {@link dev.jdist.launch.LaunchArguments} parses them; {@code jdist launch --help} lists every option.
 */
@Command(name = "launch",
        description = {"Run a program as N ranks, locally or over ssh, with the environment jdist and MLX backends need.",
                "Run 'jdist launch --help' for every option (MLX's mlx.launch options plus --java, --class-path, ...)."},
        customSynopsis = "jdist launch [options] [--] COMMAND [ARGS...]")
public final class LaunchCommand implements Callable<Integer>, MlxCounterpart {

    @Parameters(arity = "0..*", paramLabel = "ARGS", description = "launcher options and the command (see jdist launch --help)")
    List<String> args = new ArrayList<>();

    /** Takes every token raw (no option is interpreted here; '--' too is passed on). */
    @Spec
    void configure(CommandSpec spec) {
        spec.parser().unmatchedOptionsArePositionalParams(true);
        spec.parser().endOfOptionsDelimiter("\u0000jdist-launch-takes-everything\u0000");
        spec.parser().expandAtFiles(false);
        // 'jdist help launch' shows the same full option list as 'jdist launch --help'
        var sections = new java.util.LinkedHashMap<>(spec.usageMessage().sectionMap());
        sections.put("jdistLaunchFull", help -> dev.jdist.launch.LaunchArguments.commandLine(
                new dev.jdist.launch.LaunchOptions()).getUsageMessage());
        spec.usageMessage().sectionMap(sections);
        spec.usageMessage().sectionKeys(List.of("jdistLaunchFull"));
    }

    @Override
    public String usageLine(CommandLine self) {
        return dev.jdist.launch.LaunchArguments.USAGE;
    }

    @Override
    public Integer call() {
        return new Launcher(System.out, System.err, System.in, System.getenv(), true).run(args);
    }
}
