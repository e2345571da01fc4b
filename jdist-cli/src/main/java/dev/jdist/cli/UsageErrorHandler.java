package dev.jdist.cli;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Prints usage errors the way MLX's argparse-based tools do ({@code launcher.md} §1.3 and §10): a usage line, then
 * {@code jdist SUB: error: MESSAGE}, exit 2, with picocli's messages put into argparse's words where scripts know them.
 */
public final class UsageErrorHandler implements CommandLine.IParameterExceptionHandler {
    private static final Pattern NOT_UNIQUE = Pattern.compile("'(--?[^']*)' is not unique: it matches (.*)");

    @Override
    public int handleParseException(CommandLine.ParameterException ex, String[] args) {
        CommandLine cmd = ex.getCommandLine();
        PrintWriter err = cmd.getErr();
        err.print("usage: " + cmd.getHelp().synopsis(0));
        err.println(cmd.getCommandSpec().qualifiedName() + ": error: " + message(ex));
        err.flush();
        return 2;
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
