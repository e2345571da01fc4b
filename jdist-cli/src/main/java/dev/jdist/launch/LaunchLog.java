package dev.jdist.launch;

import java.io.PrintStream;

/** The launcher's report lines on stderr (launcher.md §9): colour, tag, message, space, reset. */
public final class LaunchLog {
    private final PrintStream err;
    private final boolean verbose;
    private final boolean colour;

    public LaunchLog(PrintStream err, boolean verbose) {
        this.err = err;
        this.verbose = verbose;
        String noColor = System.getenv("NO_COLOR");
        this.colour = noColor == null || noColor.isEmpty();
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

    private void line(String code, String tag, String message) {
        String text = colour ? "\u001b[" + code + "m" + tag + " " + message + " \u001b[0m\n" : tag + " " + message + "\n";
        synchronized (OutputSink.LOCK) {
            err.print(text);
            err.flush();
        }
    }
}
