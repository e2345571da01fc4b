package dev.jdist.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code jdist} command. Each subcommand is its own class in this package. */
@Command(name = "jdist",
        mixinStandardHelpOptions = true,
        version = "jdist 0.1.0",
        description = "MLX-style distributed computing for the JVM: launch jobs, configure clusters, benchmark collectives.",
        subcommands = {CommandLine.HelpCommand.class, LaunchCommand.class, ConfigCommand.class, BenchCommand.class, DoctorCommand.class})
public final class JdistCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** Builds the command line with every subcommand registered (used by main and by tests). */
    public static CommandLine commandLine() {
        FailureHandler failures = new FailureHandler();
        CommandLine cl = new CommandLine(new JdistCommand())
                .setParameterExceptionHandler(failures)
                .setExecutionExceptionHandler(failures)
                // no @file expansion: 'jdist launch -- prog @args.txt' must pass @args.txt to prog untouched
                .setExpandAtFiles(false);
        ConfigCommand.configure(cl.getSubcommands().get("config"));
        return cl;
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }
}
