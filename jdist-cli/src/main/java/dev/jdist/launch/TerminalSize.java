package dev.jdist.launch;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** The terminal size ranks get as COLUMNS/LINES (docs/reference/launcher.md §4.3): the environment first, else stdout's terminal. */
public record TerminalSize(int columns, int lines) {

    public static TerminalSize detect(Map<String, String> env) {
        int cols = positive(env.get("COLUMNS"));
        int lines = positive(env.get("LINES"));
        if (cols > 0 && lines > 0) {
            return new TerminalSize(cols, lines);
        }
        int[] tty = stdoutTerminal();
        if (cols <= 0 && tty != null) {
            cols = tty[1];
        }
        if (lines <= 0 && tty != null) {
            lines = tty[0];
        }
        return new TerminalSize(Math.max(cols, 0), Math.max(lines, 0));
    }

    private static int positive(String s) {
        if (s == null) {
            return 0;
        }
        try {
            int v = Integer.parseInt(s.trim());
            return v > 0 ? v : 0;
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** [rows, cols] of the terminal on stdout, or null when stdout is not a terminal. */
    private static int[] stdoutTerminal() {
        try {
            Path fd1 = Path.of("/proc/self/fd/1");
            if (!Files.exists(fd1)) {
                return null;
            }
            String target = Files.readSymbolicLink(fd1).toString();
            if (!target.startsWith("/dev/pts/") && !target.startsWith("/dev/tty")) {
                return null;
            }
            String out = Executables.onPath("stty")
                    .flatMap(stty -> {
                        try {
                            Process p = new ProcessBuilder(List.of(stty.toString(), "size"))
                                    .redirectInput(ProcessBuilder.Redirect.from(new File(target)))
                                    .redirectErrorStream(true).start();
                            if (!p.waitFor(2, java.util.concurrent.TimeUnit.SECONDS)) {
                                p.destroyForcibly();
                                return java.util.Optional.empty();
                            }
                            return java.util.Optional.of(new String(p.getInputStream().readAllBytes()).trim());
                        } catch (Exception e) {
                            return java.util.Optional.empty();
                        }
                    }).orElse("");
            String[] parts = out.split("\\s+");
            if (parts.length == 2) {
                return new int[]{Integer.parseInt(parts[0]), Integer.parseInt(parts[1])};
            }
        } catch (Exception ignored) {
            // unknown
        }
        return null;
    }
}
