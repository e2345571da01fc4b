package dev.jdist.cli;

import picocli.CommandLine;

/**
 * A subcommand that mirrors an MLX tool ({@code launch}: mlx.launch, {@code config}: mlx.distributed_config) and so
 * reports failures as that tool does: usage errors after argparse's usage line, other failures as {@code [ERROR]}
 * lines ({@link FailureHandler}).
 */
interface MlxCounterpart {
    /** The line argparse prints before a usage error, {@code usage: jdist SUB ...} (no trailing newline). */
    String usageLine(CommandLine self);
}
