package dev.jdist.cli;

import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one place where a failed {@code jdist} command becomes output and an exit status: picocli's parse errors and
 * every {@link CliFailure} thrown while a subcommand runs.
 * <ul>
 *   <li>Usage errors are printed the way MLX's argparse-based tools print them ({@code docs/reference/launcher.md} §1.3 and §10): a
 *       usage line, then {@code jdist SUB: error: MESSAGE}, exit 2, with picocli's messages put into argparse's words
 *       where scripts know them. A usage {@link CliFailure} of {@code bench} or {@code doctor} (no MLX counterpart)
 *       prints the error line alone.</li>
 *   <li>Other failures: {@code [ERROR]} lines (as MLX prints them) for {@link MlxCounterpart} commands, and
 *       {@code jdist SUB: LINE} for the others; then the failure's exit status.</li>
 * </ul>
 */
final class FailureHandler implements CommandLine.IParameterExceptionHandler, CommandLine.IExecutionExceptionHandler {
    private static final Pattern NOT_UNIQUE = Pattern.compile("'(--?[^']*)' is not unique: it matches (.*)");

    @Override
    public int handleParseException(CommandLine.ParameterException ex, String[] args) {
        CommandLine cmd = ex.getCommandLine();
        printUsageError(cmd, synopsisLine(cmd), message(ex));
        return 2;
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine cmd, CommandLine.ParseResult parsed) throws Exception {
        if (!(ex instanceof CliFailure failure)) {
            throw ex;
        }
        System.out.flush(); // what the command printed before it failed comes first
        cmd.getOut().flush();
        boolean mlx = cmd.getCommand() instanceof MlxCounterpart;
        if (failure.isUsage()) {
            printUsageError(cmd, mlx ? ((MlxCounterpart) cmd.getCommand()).usageLine(cmd) : null, failure.getMessage());
        } else if (mlx) {
            ConsoleLog log = new ConsoleLog(cmd.getErr(), false, ConsoleLog.colourWanted());
            failure.lines().forEach(log::error);
        } else {
            PrintWriter err = cmd.getErr();
            failure.lines().forEach(line -> err.println(cmd.getCommandSpec().qualifiedName() + ": " + line));
            err.flush();
        }
        return failure.exitStatus();
    }

    /** argparse's usage line from picocli's synopsis ({@code usage: jdist SUB [...]}, possibly wrapped). */
    static String synopsisLine(CommandLine cmd) {
        String synopsis = cmd.getHelp().synopsis(0);
        return "usage: " + (synopsis.endsWith("\n") ? synopsis.substring(0, synopsis.length() - 1) : synopsis);
    }

    private static void printUsageError(CommandLine cmd, String usageLine, String message) {
        PrintWriter err = cmd.getErr();
        if (usageLine != null) {
            err.println(usageLine);
        }
        err.println(cmd.getCommandSpec().qualifiedName() + ": error: " + message);
        err.flush();
    }

    static String message(CommandLine.ParameterException ex) {
        if (ex instanceof CommandLine.UnmatchedArgumentException unmatched) {
            return "unrecognized arguments: " + String.join(" ", unmatched.getUnmatched());
        }
        String msg = ex.getMessage();
        Matcher m = NOT_UNIQUE.matcher(msg);
        if (m.find()) {
            return "ambiguous option: " + m.group(1) + " could match " + m.group(2).replace("'", "");
        }
        return msg;
    }
}
