package dev.jdist.rendezvous;

import dev.jdist.spi.RankRecord;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The agreement check (docs/clusters.md): before the first collective every rank must have been started with the
 * same world size, backend, job token, hostfile, jdist version, wire protocol and backend settings, and each with its
 * own rank. Pure: given the records, it returns the one error every rank raises, or nothing. The same function judges
 * the store's joins (rank 0), an embedder's all-gather and a group formed from a hostfile (every rank, same input).
 */
final class Agreement {

    private Agreement() {}

    /**
     * What rank 0 saw in the store when it judged.
     *
     * @param expected   rank 0's world size
     * @param byRank     the first record of each rank 0..expected-1 (null: missing)
     * @param duplicates further records claiming a rank that was already taken
     * @param beyond     records claiming ranks at or above {@code expected}
     * @param timedOut   whether the deadline ran out before every rank joined
     * @param waited     how long rank 0 waited for the ranks (the rendezvous deadline)
     * @param notes      what the store saw of a missing rank (null: nothing)
     * @param refusals   connections the store refused
     */
    record Joins(int expected, List<RankRecord> byRank, List<RankRecord> duplicates, List<RankRecord> beyond,
                 boolean timedOut, Duration waited, IntFunction<String> notes, List<String> refusals) {}

    /** The store's verdict: the one error, or empty when every rank joined and all agree. */
    static Optional<String> judge(Joins j) {
        List<String> clauses = new ArrayList<>();
        for (RankRecord d : j.duplicates()) {
            RankRecord first = j.byRank().get(d.rank());
            clauses.add("two processes claim rank " + d.rank() + ": " + (first == null ? "?" : first.where()) + " and "
                    + d.where() + " (each process of the job needs its own rank: check " + d.rankSource() + " on both)");
        }
        List<Integer> missing = new ArrayList<>();
        for (int q = 0; q < j.expected(); q++) if (j.byRank().get(q) == null) missing.add(q);
        String notYet = null;
        if (!missing.isEmpty() && !j.timedOut()) {
            // judged before the deadline because of a claim no join can fix (above or below): the absent ranks come last
            List<String> seen = new ArrayList<>();
            for (int q : missing) {
                String n = j.notes().apply(q);
                seen.add("rank " + q + ": " + (n == null ? "never connected" : n));
            }
            notYet = (missing.size() == 1 ? "rank " : "ranks ") + list(missing.stream().map(String::valueOf).toList())
                    + " had not joined when rank 0 judged, " + Rendezvous.seconds(j.waited()) + " s after it began to wait ("
                    + String.join("; ", seen) + ")";
        } else if (!missing.isEmpty()) {
            StringBuilder sb = new StringBuilder("expected " + j.expected() + " ranks; " + (j.expected() - missing.size())
                    + " joined within " + Rendezvous.seconds(j.waited()) + " s; missing " + (missing.size() == 1 ? "rank " : "ranks ")
                    + list(missing.stream().map(String::valueOf).toList()));
            List<String> seen = new ArrayList<>();
            for (int q : missing) {
                String n = j.notes().apply(q);
                seen.add("rank " + q + ": " + (n == null ? "never connected" : n));
            }
            sb.append(" (").append(String.join("; ", seen)).append(")");
            List<String> strangers = j.refusals().stream().filter(r -> !r.contains("claiming rank")).toList();
            if (!strangers.isEmpty()) sb.append("; the store also refused ").append(String.join("; ", strangers));
            sb.append(". Is every rank started (with the same rendezvous address), and can each reach rank 0's host?");
            clauses.add(sb.toString());
        }
        List<RankRecord> present = new ArrayList<>();
        for (RankRecord r : j.byRank()) if (r != null) present.add(r);
        present.addAll(j.beyond());
        for (RankRecord r : j.beyond()) {
            if (r.size() == j.expected()) {
                clauses.add("rank " + r.rank() + " (" + r.hostname() + ") joined, started with " + r.rankSource() + "=" + r.rank()
                        + ", but " + r.sizeSource() + "=" + r.size() + " allows ranks 0.." + (r.size() - 1)
                        + " (give every process its own rank below the world size)");
            }
        }
        disagreements(present).ifPresent(clauses::add);
        if (notYet != null) clauses.add(notYet);
        return clauses.isEmpty() ? Optional.empty() : Optional.of(String.join("; also: ", clauses));
    }

    /**
     * For a complete table (one record per rank, in slot order: slot q must hold rank q): the error, or empty.
     * Used where every rank sees every record (an all-gather), so every rank computes the same error.
     */
    static Optional<String> judgeTable(List<RankRecord> slots, String how) {
        List<String> clauses = new ArrayList<>();
        for (int q = 0; q < slots.size(); q++) {
            RankRecord r = slots.get(q);
            if (r.rank() != q) {
                clauses.add(how + " put " + r.where() + ", which says it is rank " + r.rank() + ", in place " + q
                        + " (every process must pass its own rank, the same one it has in the exchange)");
            }
        }
        disagreements(slots).ifPresent(clauses::add);
        if (clauses.isEmpty() && !slots.isEmpty() && slots.getFirst().size() != slots.size()) {
            clauses.add("the " + slots.size() + " ranks that met were all started with " + slots.getFirst().sizeSource() + "="
                    + slots.getFirst().size());
        }
        return clauses.isEmpty() ? Optional.empty() : Optional.of(String.join("; also: ", clauses));
    }

    /** Every field that differs between records, one clause each; empty when all agree. */
    static Optional<String> disagreements(List<RankRecord> records) {
        if (records.size() < 2) return Optional.empty();
        List<String> clauses = new ArrayList<>();
        field(records, clauses, r -> String.valueOf(r.size()),
                (rs, r) -> startedWith(rs) + r.sizeSource() + "=" + r.size(),
                (minority, r) -> "the others with " + (r.sizeSource().equals(minority.sizeSource()) ? "" : r.sizeSource() + "=") + r.size(),
                "every rank must be started with the same world size");
        field(records, clauses, RankRecord::backend,
                (rs, r) -> rs + " chose backend " + r.backend(),
                (minority, r) -> "the others " + r.backend(),
                "choose the backend alike on every rank (JDIST_BACKEND), and nccl needs a usable GPU on every rank");
        field(records, clauses, RankRecord::tokenDigest,
                (rs, r) -> r.tokenDigest().isEmpty() ? startedWith(rs).replace("with ", "without ") + "JDIST_JOB_TOKEN"
                        : startedWith(rs) + "a different JDIST_JOB_TOKEN (digest " + r.tokenDigest() + ")",
                (minority, r) -> r.tokenDigest().isEmpty() ? "the others without one"
                        : "the others with " + (minority.tokenDigest().isEmpty() ? "one" : "digest " + r.tokenDigest()),
                "give every rank the same JDIST_JOB_TOKEN (`jdist launch` sets one per job)");
        field(records, clauses, RankRecord::jobDigest,
                (rs, r) -> startedWith(rs) + describeJob(r),
                (minority, r) -> "the others with " + describeJob(r),
                "give every rank the same hostfile");
        field(records, clauses, RankRecord::jdistVersion,
                (rs, r) -> rs + (plural(rs) ? " run" : " runs") + " jdist " + r.jdistVersion(),
                (minority, r) -> "the others " + r.jdistVersion(),
                "run the same jdist release on every rank");
        field(records, clauses, r -> String.valueOf(r.wireProtocol()),
                (rs, r) -> rs + (plural(rs) ? " speak" : " speaks") + " jdist wire protocol " + r.wireProtocol(),
                (minority, r) -> "the others " + r.wireProtocol(),
                "run the same jdist release on every rank");
        TreeSet<String> keys = new TreeSet<>();
        for (RankRecord r : records) keys.addAll(r.settings().keySet());
        for (String k : keys) {
            field(records, clauses, r -> r.settings().getOrDefault(k, "<unset>"),
                    (rs, r) -> startedWith(rs) + k + "=" + r.settings().getOrDefault(k, "<unset>"),
                    (minority, r) -> "the others with " + r.settings().getOrDefault(k, "<unset>"),
                    "set " + k + " alike on every rank");
        }
        return clauses.isEmpty() ? Optional.empty() : Optional.of(String.join("; ", clauses));
    }

    private interface Minority {
        String text(String ranks, RankRecord example);
    }

    private interface Majority {
        String text(RankRecord minorityExample, RankRecord majorityExample);
    }

    /** Groups the records by {@code key}; the largest group (ties: the one with the lowest rank) is "the others". */
    private static void field(List<RankRecord> records, List<String> clauses, Function<RankRecord, String> key,
                              Minority minority, Majority majority, String fix) {
        Map<String, List<RankRecord>> groups = new LinkedHashMap<>();
        List<RankRecord> sorted = new ArrayList<>(records);
        sorted.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
        for (RankRecord r : sorted) groups.computeIfAbsent(key.apply(r), x -> new ArrayList<>()).add(r);
        if (groups.size() < 2) return;
        List<RankRecord> big = null;
        for (List<RankRecord> g : groups.values()) if (big == null || g.size() > big.size()) big = g;
        List<String> parts = new ArrayList<>();
        RankRecord firstMinority = null;
        for (List<RankRecord> g : groups.values()) {
            if (g == big) continue;
            if (firstMinority == null) firstMinority = g.getFirst();
            parts.add(minority.text(ranks(g), g.getFirst()));
        }
        clauses.add(String.join(", ", parts) + ", " + majority.text(firstMinority, big.getFirst()) + " (" + fix + ")");
    }

    private static String startedWith(String ranks) {
        return ranks + (plural(ranks) ? " were" : " was") + " started with ";
    }

    private static boolean plural(String ranks) { return ranks.startsWith("ranks "); }

    private static String describeJob(RankRecord r) {
        if (r.jobDigest().isEmpty()) return "no hostfile";
        return r.jobDescription() + " (sha256 " + r.jobDigest().substring(0, Math.min(12, r.jobDigest().length())) + ")";
    }

    /** {@code rank 5 (node3)}, {@code ranks 1 (a) and 2 (b)}, {@code ranks 1 (a), 2 (b) and 3 (c)}. */
    static String ranks(List<RankRecord> g) {
        List<String> items = g.stream().map(r -> r.rank() + " (" + r.hostname() + ")").toList();
        return (items.size() == 1 ? "rank " : "ranks ") + list(items);
    }

    static String list(List<String> items) {
        if (items.size() == 1) return items.getFirst();
        return String.join(", ", items.subList(0, items.size() - 1)) + " and " + items.getLast();
    }

    /**
     * The table with the addresses other ranks can use. A rank that reached rank 0's store through loopback published
     * a loopback address; when ranks on other hosts exist, such a rank (on rank 0's host) is reached at the address of
     * that host the others used ({@code observed}, null when none was seen). Returns the error when that cannot work.
     */
    static Result reachable(List<RankRecord> table, String observed) {
        boolean anyLoopback = false;
        boolean anyOther = false;
        for (RankRecord r : table) {
            if (isLoopback(r.host())) anyLoopback = true;
            else anyOther = true;
        }
        if (!anyLoopback || !anyOther) return new Result(table, null);
        List<RankRecord> out = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        String rank0Boot = table.getFirst().bootId();
        for (RankRecord r : table) {
            if (!isLoopback(r.host())) {
                out.add(r);
                continue;
            }
            if (observed == null || !r.bootId().equals(rank0Boot)) {
                problems.add("rank " + r.rank() + " (" + r.hostname() + ")");
                out.add(r);
            } else {
                out.add(r.withHost(observed));
            }
        }
        if (!problems.isEmpty()) {
            return new Result(out, list(problems) + " can be reached only through loopback, but ranks on other hosts need to "
                    + "reach them: set JDIST_IFNAME to the network interface the ranks share (e.g. eth0) on every rank");
        }
        return new Result(out, null);
    }

    record Result(List<RankRecord> table, String error) {}

    static boolean isLoopback(String host) {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
