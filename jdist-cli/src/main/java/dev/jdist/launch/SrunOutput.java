package dev.jdist.launch;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads what {@code srun --label} prints, so that {@code jdist launch --launcher srun} keeps its own output and report
 * rules (docs/reference/launcher.md §7.1, §8.1): a task's line starts with its rank ({@code "  3: text"}, right-aligned); srun's own
 * lines on stderr say how tasks ended ({@code srun: error: node1: task 3: Exited with exit code 2},
 * {@code srun: error: node1: tasks 0-2,5: Killed}). Pure parsing.
 */
public final class SrunOutput {

    private static final Pattern REPORT = Pattern.compile("^srun: error: (\\S+): tasks? ([0-9][0-9,\\-]*): (.+?)\\s*$");
    private static final Pattern EXITED = Pattern.compile("^Exited with exit code (\\d+)$");
    /** strsignal(3) texts srun prints for a task a signal ended, as status 128 + signal (what Java reports, §8.1). */
    private static final Map<String, Integer> SIGNALS = Map.ofEntries(Map.entry("Hangup", 1), Map.entry("Interrupt", 2),
            Map.entry("Quit", 3), Map.entry("Illegal instruction", 4), Map.entry("Trace/breakpoint trap", 5),
            Map.entry("Aborted", 6), Map.entry("Bus error", 7), Map.entry("Floating point exception", 8),
            Map.entry("Killed", 9), Map.entry("User defined signal 1", 10), Map.entry("Segmentation fault", 11),
            Map.entry("User defined signal 2", 12), Map.entry("Broken pipe", 13), Map.entry("Alarm clock", 14),
            Map.entry("Terminated", 15));

    private SrunOutput() {
    }

    /**
     * The rank that starts {@code line} ({@code "  3: "}) and where the task's own text begins, or empty for a line
     * without a label (srun's own messages).
     */
    public static Optional<Labelled> label(byte[] line, int length) {
        int i = 0;
        while (i < length && line[i] == ' ') i++;
        int digits = i;
        long rank = 0;
        while (i < length && line[i] >= '0' && line[i] <= '9' && i - digits < 9) {
            rank = rank * 10 + (line[i] - '0');
            i++;
        }
        if (i == digits || i >= length || line[i] != ':') return Optional.empty();
        // "3: text" — srun writes one space after the colon; an empty line is "3: " or "3:" at the end
        int start = i + 1 < length && line[i + 1] == ' ' ? i + 2 : i + 1;
        return Optional.of(new Labelled((int) rank, start));
    }

    /** A labelled line: the task's rank and the offset of its text. */
    public record Labelled(int rank, int textStart) {
    }

    /** How srun says one or more tasks ended. {@code status}: the exit code, or 128 + signal; -1 for an unknown signal. */
    public record TaskReport(String node, List<Integer> ranks, boolean signalled, int status, String text) {
        public TaskReport {
            ranks = List.copyOf(ranks);
        }
    }

    /** srun's report line ({@code srun: error: NODE: task(s) LIST: WHAT}), or empty for any other line. */
    public static Optional<TaskReport> report(String line) {
        Matcher m = REPORT.matcher(line);
        if (!m.matches()) return Optional.empty();
        List<Integer> ranks = taskList(m.group(2));
        if (ranks.isEmpty()) return Optional.empty();
        String what = m.group(3);
        Matcher exited = EXITED.matcher(what);
        if (exited.matches()) {
            return Optional.of(new TaskReport(m.group(1), ranks, false, Integer.parseInt(exited.group(1)), what));
        }
        String name = what.replace(" (core dumped)", "");
        Integer sig = SIGNALS.get(name);
        return Optional.of(new TaskReport(m.group(1), ranks, true, sig == null ? -1 : 128 + sig, what));
    }

    /** Slurm's task list: {@code 3}, {@code 0-2,5}. Empty when malformed. */
    static List<Integer> taskList(String list) {
        List<Integer> out = new ArrayList<>();
        for (String part : list.split(",")) {
            String[] ends = part.split("-", -1);
            try {
                if (ends.length == 1) {
                    out.add(Integer.parseInt(ends[0]));
                } else if (ends.length == 2) {
                    int a = Integer.parseInt(ends[0]);
                    int b = Integer.parseInt(ends[1]);
                    if (b < a || b - a > 1 << 20) return List.of();
                    for (int r = a; r <= b; r++) out.add(r);
                } else {
                    return List.of();
                }
            } catch (NumberFormatException e) {
                return List.of();
            }
        }
        return out;
    }
}
