package dev.jdist.console;

import java.io.Flushable;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.function.Consumer;

/**
 * The {@code [INFO]}/{@code [WARN]}/{@code [ERROR]} lines of {@code jdist launch} and {@code jdist config} on
 * stderr (docs/reference/launcher.md §9): colour escape, tag, one space, the message, one space, reset. INFO only when
 * verbose; {@code NO_COLOR} turns colours off. Lines never interleave with ranks' forwarded output.
 */
public final class ConsoleLog {
    /** One lock for everything written to the launcher's stdout and stderr, so chunks and report lines never interleave. */
    public static final Object LOCK = new Object();

    private final Consumer<String> err;
    private final boolean verbose;
    private final boolean colour;

    public ConsoleLog(PrintStream err, boolean verbose) {
        this(err, verbose, colourWanted());
    }

    /** On a PrintStream (System.err) or a PrintWriter (a picocli command line's error writer). */
    public <W extends Appendable & Flushable> ConsoleLog(W err, boolean verbose, boolean colour) {
        this.err = text -> {
            try {
                err.append(text);
                err.flush();
            } catch (IOException e) {
                throw new UncheckedIOException(e); // print streams and writers report errors by a flag, not by throwing
            }
        };
        this.verbose = verbose;
        this.colour = colour;
    }

    /** Colours unless {@code NO_COLOR} is set (https://no-color.org convention). */
    public static boolean colourWanted() {
        String noColor = System.getenv("NO_COLOR");
        return noColor == null || noColor.isEmpty();
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
        synchronized (LOCK) {
            err.accept(text);
        }
    }

    private void line(String code, String tag, String message) {
        // MLX prints the same words with and without colour: tag, space, message, space (then the reset)
        String text = colour ? "\u001b[" + code + "m" + tag + " " + message + " \u001b[0m\n" : tag + " " + message + " \n";
        synchronized (LOCK) {
            err.accept(text);
        }
    }
}
