package dev.jdist.config;

import java.io.PrintStream;

/**
 * The {@code [INFO]}/{@code [WARN]}/{@code [ERROR]} lines of {@code launcher.md} §9 on stderr: colour escape, tag, one
 * space, the message, one space, reset. INFO only with {@code --verbose}. {@code NO_COLOR} turns colours off.
 */
public final class ConsoleLog {
    private final PrintStream err;
    private final boolean verbose;
    private final boolean color;

    public ConsoleLog(PrintStream err, boolean verbose, boolean color) {
        this.err = err;
        this.verbose = verbose;
        this.color = color;
    }

    public static ConsoleLog stderr(boolean verbose) {
        String noColor = System.getenv("NO_COLOR");
        return new ConsoleLog(System.err, verbose, noColor == null || noColor.isEmpty());
    }

    public boolean verbose() {
        return verbose;
    }

    public void info(String message) {
        if (verbose) {
            line("32", "[INFO]", message);
        }
    }

    public void warn(String message) {
        line("33", "[WARN]", message);
    }

    public void error(String message) {
        line("31", "[ERROR]", message);
    }

    /** Text exactly as given (a remote command's stderr). */
    public void raw(String text) {
        err.print(text);
        err.flush();
    }

    private void line(String colour, String tag, String message) {
        String text = tag + " " + message + " ";
        err.print(color ? "\u001b[" + colour + "m" + text + "\u001b[0m\n" : text + "\n");
        err.flush();
    }
}
