package dev.jdist.console;

import java.util.List;

/**
 * Why a {@code jdist} command stops: the lines to print on stderr and the exit status. Thrown from any layer
 * (hosts, launch, config, bench, doctor) and printed in one place, the failure handler of {@code dev.jdist.cli}:
 * <ul>
 *   <li>a usage failure (a bad option, host list or hostfile; exit 2) is one message, printed as
 *       {@code jdist SUB: error: MESSAGE} after the command's argparse usage line where it mirrors an MLX tool;</li>
 *   <li>any other failure is printed line by line: as {@code [ERROR]} lines by {@code launch} and {@code config}
 *       (as MLX does), as {@code jdist SUB: LINE} by jdist's own {@code bench} and {@code doctor}.</li>
 * </ul>
 */
public final class CliFailure extends RuntimeException {
    private final int exitStatus;
    private final List<String> lines;
    private final boolean usage;

    private CliFailure(int exitStatus, List<String> lines, boolean usage) {
        super(String.join("\n", lines));
        this.exitStatus = exitStatus;
        this.lines = List.copyOf(lines);
        this.usage = usage;
    }

    /** A usage error: exit 2. The message names what is wrong and how to fix it. */
    public static CliFailure usage(String message) {
        return new CliFailure(2, List.of(message), true);
    }

    /** A failure that is not a usage error: print {@code lines} (each may be empty), then exit with {@code exitStatus}. */
    public static CliFailure of(int exitStatus, List<String> lines) {
        return new CliFailure(exitStatus, lines, false);
    }

    public static CliFailure of(int exitStatus, String... lines) {
        return of(exitStatus, List.of(lines));
    }

    public int exitStatus() {
        return exitStatus;
    }

    public List<String> lines() {
        return lines;
    }

    public boolean isUsage() {
        return usage;
    }
}
