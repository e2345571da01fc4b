package dev.jdist.flight;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * What the flight records of one job say, as report lines (docs/observability.md, "Reading a failed job"): per
 * group, where each rank is (in which operation, at which sequence number, in what state), which ranks are behind,
 * which ranks disagree on an operation (the same sequence number, a different operation, dtype or shape), which
 * ranks left no record, and which rank failed first and with what. A pure function of the records: {@code jdist
 * launch} prints it for a failed job, {@code jdist doctor analyze DIR} for records gathered by hand.
 */
public final class FlightAnalysis {

    private static final DateTimeFormatter CLOCK = DateTimeFormatter.ofPattern("HH:mm:ss.SSS", Locale.ROOT).withZone(ZoneOffset.UTC);

    private FlightAnalysis() {}

    /** One rank's record of one group. */
    private record Member(FlightDump dump, FlightDump.GroupRecord group) {
        FlightDump.Operation last() { return group.recent().isEmpty() ? null : group.recent().get(group.recent().size() - 1); }
    }

    /**
     * How a rank's process ended, as its launcher saw it.
     *
     * @param exitCode        its exit status
     * @param endedByLauncher whether the launcher ended it (after another rank failed, a signal or {@code --timeout})
     */
    public record RankEnd(int exitCode, boolean endedByLauncher) {
    }

    /** {@link #analyze(List, int, Map)} without knowing how the ranks ended. */
    public static List<String> analyze(List<FlightDump> dumps, int worldSize) {
        return analyze(dumps, worldSize, Map.of());
    }

    /**
     * @param dumps     the records of one job, one per process, in any order
     * @param worldSize the job's number of ranks when known (the launcher knows it), else 0: ranks of {@code world}
     *                  missing from {@code dumps} are then named up to the largest group size recorded
     * @param ends      how the processes of {@code world}'s ranks ended, by rank, when known (the launcher knows it): a
     *                  rank without a record is then explained by how it ended
     * @return the report, one line per item, without trailing newlines; empty when there are no records
     */
    public static List<String> analyze(List<FlightDump> dumps, int worldSize, Map<Integer, RankEnd> ends) {
        List<String> out = new ArrayList<>();
        if (dumps.isEmpty()) return out;
        Map<String, Map<Integer, Member>> groups = new LinkedHashMap<>();
        for (FlightDump d : dumps.stream().sorted(Comparator.comparing(FlightAnalysis::timeOf)).toList()) {
            for (FlightDump.GroupRecord g : d.groups()) {
                groups.computeIfAbsent(g.group(), k -> new TreeMap<>()).put(g.rank(), new Member(d, g));   // a later record wins
            }
        }
        List<String> labels = new ArrayList<>(groups.keySet());
        labels.sort(Comparator.comparing((String l) -> !l.equals("world")).thenComparing(l -> l));
        for (String label : labels) {
            boolean world = label.equals("world");
            analyzeGroup(label, groups.get(label), world ? worldSize : 0, world ? ends : Map.of(), out);
        }
        failures(dumps, out);
        long empty = dumps.stream().filter(d -> d.groups().isEmpty()).count();
        if (empty > 0) {
            out.add(empty + " record" + (empty == 1 ? "" : "s") + " with no operation (processes that formed no group of two or more ranks, "
                    + "or ran nothing on one): " + dumps.stream().filter(d -> d.groups().isEmpty())
                    .map(d -> "pid " + d.pid() + " on " + d.host()).collect(Collectors.joining(", ")));
        }
        return out;
    }

    private static void analyzeGroup(String label, Map<Integer, Member> members, int knownSize, Map<Integer, RankEnd> ends,
                                     List<String> out) {
        Member any = members.values().iterator().next();
        int size = Math.max(knownSize, members.values().stream().mapToInt(m -> m.group().size()).max().orElse(0));
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < size; r++) if (!members.containsKey(r)) missing.add(r);
        out.add("group " + label + " (" + any.group().backend() + ", " + size + " ranks): "
                + (missing.isEmpty() ? "records from all " + size + " ranks"
                : "records from " + ranks(new ArrayList<>(members.keySet())) + "; none from " + ranks(missing)));

        // Where each rank is: one clause per (sequence, operation, state), the lowest sequence first.
        Map<String, List<Integer>> where = new LinkedHashMap<>();
        Map<String, FlightDump.Operation> whereOp = new LinkedHashMap<>();
        for (var e : members.entrySet()) {
            FlightDump.Operation last = e.getValue().last();
            if (last == null) continue;
            String key = last.state() + " " + last.describe() + " #" + last.sequence()
                    + (last.state().equals(FlightDump.FAILED) ? " " + errorType(last.error()) : "");
            where.computeIfAbsent(key, k -> new ArrayList<>()).add(e.getKey());
            whereOp.put(key, last);
        }
        List<String> keys = new ArrayList<>(where.keySet());
        keys.sort(Comparator.comparing((String k) -> whereOp.get(k).sequence()).thenComparing(k -> where.get(k).get(0)));
        out.add(keys.stream().map(k -> clause(where.get(k), whereOp.get(k))).collect(Collectors.joining("; ")));

        behind(members, missing, out);
        disagreements(members, out);
        missing(members, missing, ends, out);
        if (members.values().stream().anyMatch(m -> m.group().recent().stream().anyMatch(FlightDump.Operation::pointToPoint))) {
            out.add("note: send and recv are numbered only on their two ranks, so after one the other ranks' sequence numbers "
                    + "differ by design");
        }
    }

    /** Why ranks left no record: how they ended, when the launcher said so. */
    private static void missing(Map<Integer, Member> members, List<Integer> missing, Map<Integer, RankEnd> ends, List<String> out) {
        List<Integer> normal = new ArrayList<>();
        List<String> crashed = new ArrayList<>();
        List<Integer> silent = new ArrayList<>();
        for (int r : missing) {
            RankEnd end = ends.get(r);
            if (end != null && !end.endedByLauncher() && end.exitCode() == 0) normal.add(r);
            else if (end != null && !end.endedByLauncher()) crashed.add("rank " + r + " exited with code " + end.exitCode());
            else silent.add(r);
        }
        if (!normal.isEmpty()) {
            out.add(ranks(normal) + " left no flight record: " + (normal.size() == 1 ? "it" : "they")
                    + " exited with code 0 (a process that ends normally writes none)");
        }
        if (!crashed.isEmpty()) {
            out.add(String.join(", ", crashed) + " without a flight record: " + (crashed.size() == 1 ? "it" : "they")
                    + " failed outside jdist's operations (see " + (crashed.size() == 1 ? "its" : "their") + " output)");
        }
        if (!silent.isEmpty()) {
            out.add(ranks(silent) + " left no flight record: stopped (SIGSTOP) or killed (SIGKILL) before writing one, not a jdist "
                    + "program, or running with JDIST_FLIGHT_RECORDER=0");
            boolean othersWait = members.values().stream().map(Member::last)
                    .allMatch(op -> op != null && !op.state().equals(FlightDump.COMPLETED));
            if (othersWait) {
                out.add("every rank with a record is inside an operation: the one" + (silent.size() == 1 ? "" : "s")
                        + " without a record (" + ranks(silent) + ") most likely never joined it");
            }
        }
    }

    /** {@code rank 2 is in all_sum float32[1024] #1834}, {@code ranks 0, 1 failed in ...}, {@code rank 3 has finished ...}. */
    private static String clause(List<Integer> who, FlightDump.Operation op) {
        boolean one = who.size() == 1;
        String what = op.describe() + " #" + op.sequence();
        return ranks(who) + " " + switch (op.state()) {
            case FlightDump.STARTED -> (one ? "is in " : "are in ") + what;
            case FlightDump.FAILED -> "failed in " + what + " (" + errorType(op.error()) + ")";
            default -> (one ? "has finished " : "have finished ") + what + " and " + (one ? "is" : "are") + " in no operation";
        };
    }

    /** Ranks whose latest operation has a lower sequence number than another rank's. */
    private static void behind(Map<Integer, Member> members, List<Integer> missing, List<String> out) {
        long max = members.values().stream().map(Member::last).filter(Objects::nonNull).mapToLong(FlightDump.Operation::sequence)
                .max().orElse(-1);
        List<String> behind = new ArrayList<>();
        List<Integer> ahead = new ArrayList<>();
        for (var e : members.entrySet()) {
            FlightDump.Operation last = e.getValue().last();
            if (last == null) continue;
            if (last.sequence() == max) {
                ahead.add(e.getKey());
                continue;
            }
            String what = "rank " + e.getKey() + " at #" + last.sequence();
            if (last.state().equals(FlightDump.COMPLETED)) {
                Duration idle = between(last.end(), e.getValue().dump().time());
                what += " (finished it" + (idle == null ? "" : " " + seconds(idle) + " before its record was written")
                        + " and has not begun #" + (last.sequence() + 1) + ": computing, or stuck outside jdist)";
            } else if (last.state().equals(FlightDump.STARTED)) {
                Duration in = between(last.start(), e.getValue().dump().time());
                what += " (inside it" + (in == null ? "" : " for " + seconds(in)) + ")";
            }
            behind.add(what);
        }
        if (!behind.isEmpty()) {
            out.add("behind: " + String.join(", ", behind) + "; " + ranks(ahead) + " " + (ahead.size() == 1 ? "is" : "are") + " at #" + max);
        }
    }

    /** The first sequence number the ranks recorded different collectives for, and how many more there are. */
    private static void disagreements(Map<Integer, Member> members, List<String> out) {
        TreeMap<Long, Map<String, List<Integer>>> bySeq = new TreeMap<>();
        for (var e : members.entrySet()) {
            for (FlightDump.Operation op : e.getValue().group().recent()) {
                if (op.pointToPoint()) continue;
                bySeq.computeIfAbsent(op.sequence(), k -> new LinkedHashMap<>())
                        .computeIfAbsent(op.describe(), k -> new ArrayList<>()).add(e.getKey());
            }
        }
        List<Long> differing = bySeq.entrySet().stream().filter(e -> e.getValue().size() > 1).map(Map.Entry::getKey).toList();
        if (differing.isEmpty()) return;
        long first = differing.get(0);
        List<Map.Entry<String, List<Integer>>> calls = new ArrayList<>(bySeq.get(first).entrySet());
        calls.sort(Comparator.comparing((Map.Entry<String, List<Integer>> c) -> -c.getValue().size()).thenComparing(c -> c.getValue().get(0)));
        out.add("ranks disagree on operation #" + first + ": " + calls.stream()
                .map(c -> ranks(c.getValue()) + " call" + (c.getValue().size() == 1 ? "s " : " ") + c.getKey())
                .collect(Collectors.joining("; "))
                + (differing.size() > 1 ? " (and on " + (differing.size() - 1) + " later operation" + (differing.size() == 2 ? "" : "s") + ")" : ""));
    }

    /** The first failure of the job by the hosts' clocks, then how the others failed. */
    private static void failures(List<FlightDump> dumps, List<String> out) {
        List<FlightDump> failed = dumps.stream().filter(d -> d.failure() != null)
                .sorted(Comparator.comparing(d -> instant(d.failure().time()), Comparator.nullsLast(Comparator.naturalOrder()))).toList();
        if (failed.isEmpty()) return;
        FlightDump first = failed.get(0);
        FlightDump.Failure f = first.failure();
        Instant t0 = instant(f.time());
        out.add("first failure: rank " + f.rank() + " of " + f.group() + " on " + first.host() + " (pid " + first.pid() + ")"
                + (t0 == null ? "" : " at " + CLOCK.format(t0) + " UTC")
                + (f.operation() == null ? "" : ", in " + f.operation() + " #" + f.sequence()) + ": " + f.error());
        if (failed.size() > 1) {
            out.add("then: " + failed.subList(1, failed.size()).stream().map(d -> {
                Instant t = instant(d.failure().time());
                String after = t0 == null || t == null ? "" : ", +" + seconds(Duration.between(t0, t));
                return "rank " + d.failure().rank() + (d.failure().group().equals(f.group()) ? "" : " of " + d.failure().group())
                        + " (" + errorType(d.failure().error()) + after + ")";
            }).collect(Collectors.joining(", ")));
        }
    }

    /** {@code rank 2}, {@code ranks 0, 1, 3}. */
    static String ranks(List<Integer> ranks) {
        List<Integer> sorted = new ArrayList<>(new TreeSet<>(ranks));
        return (sorted.size() == 1 ? "rank " : "ranks ") + sorted.stream().map(String::valueOf).collect(Collectors.joining(", "));
    }

    private static String errorType(String error) {
        if (error == null) return "unknown error";
        int colon = error.indexOf(':');
        return colon < 0 ? error : error.substring(0, colon);
    }

    private static Instant timeOf(FlightDump d) {
        Instant t = instant(d.time());
        return t == null ? Instant.EPOCH : t;
    }

    private static Instant instant(String iso) {
        if (iso == null) return null;
        try {
            return Instant.parse(iso);
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static Duration between(String from, String to) {
        Instant a = instant(from), b = instant(to);
        return a == null || b == null ? null : Duration.between(a, b);
    }

    private static String seconds(Duration d) {
        double s = d.toNanos() / 1e9;
        return String.format(Locale.ROOT, s < 10 ? "%.3f s" : "%.1f s", s);
    }
}
