package dev.jdist.liveness;

import dev.jdist.OperationFingerprint;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the liveness watch concludes from what the ranks report, as pure functions (tested without sockets): ranks that
 * called different collectives, and the report of a rank that has waited long for the others.
 */
public final class Diagnosis {
    private Diagnosis() {}

    /**
     * One rank as this rank last heard of it.
     *
     * @param where      {@code node2 (pid 4711, 10.0.0.3)}
     * @param running    the operation it was in, or null
     * @param last       the last operation it finished, or null
     * @param heardAgoMs how long ago its last heartbeat arrived
     * @param sinceMs    how long it had been in {@code running} (or idle after {@code last}) when it was last heard
     * @param left       whether it closed its group
     * @param elsewhere  for a group made by {@code split}: what the rank does outside it, when its heartbeat shows no
     *                   operation of this group (then {@code running} and {@code last} are null); else null
     */
    public record Seen(int rank, String where, OperationFingerprint running, OperationFingerprint last, long heardAgoMs,
                       long sinceMs, boolean left, String elsewhere) {
        public Seen(int rank, String where, OperationFingerprint running, OperationFingerprint last, long heardAgoMs, long sinceMs,
                    boolean left) {
            this(rank, where, running, last, heardAgoMs, sinceMs, left, null);
        }
    }

    /**
     * A mismatch: the calls of the ranks at one collective number (rank → call), and a note when those calls are alike
     * and the difference lies further back (their {@link OperationFingerprint#history()} digests differ).
     */
    public record Mismatch(Map<Integer, OperationFingerprint> calls, String note) {}

    /**
     * The first collective number at which the ranks' known calls differ, or null. {@code known} holds, per rank, the
     * collectives it is known to have called (running, finished, recent; nulls ignored); each (rank, collective number)
     * names one call, so reports heard at different times can be compared. {@code strict} compares shapes, otherwise
     * element counts ({@link OperationFingerprint#sameCall}). When every known call agrees but two ranks' digests of the
     * collectives before a number differ, the calls at that number come back with a note saying so.
     */
    public static Mismatch mismatch(Map<Integer, List<OperationFingerprint>> known, boolean strict) {
        TreeMap<Long, Map<Integer, OperationFingerprint>> byNumber = new TreeMap<>();
        known.forEach((rank, calls) -> {
            for (OperationFingerprint f : calls) {
                if (f != null && f.isCollective()) byNumber.computeIfAbsent(f.collective(), c -> new TreeMap<>()).put(rank, f);
            }
        });
        for (Map<Integer, OperationFingerprint> calls : byNumber.values()) {
            OperationFingerprint first = null;
            for (OperationFingerprint f : calls.values()) {
                if (first == null) first = f;
                else if (!first.sameCall(f, strict)) return new Mismatch(calls, "");
            }
        }
        for (Map.Entry<Long, Map<Integer, OperationFingerprint>> e : byNumber.entrySet()) {
            Map<Integer, OperationFingerprint> calls = e.getValue();
            Map<Integer, List<Integer>> byDigest = new TreeMap<>();
            calls.forEach((rank, f) -> byDigest.computeIfAbsent(f.history(), h -> new ArrayList<>()).add(rank));
            if (byDigest.size() > 1) {
                List<String> sides = new ArrayList<>();
                for (List<Integer> ranks : byDigest.values()) sides.add(ranks(ranks));
                return new Mismatch(calls, ", but their earlier collectives differ (" + String.join(" / ", sides) + " called different "
                        + "collectives, or a different number of them, before collective #" + e.getKey() + ")");
            }
        }
        return null;
    }

    /**
     * {@code rank 2 is in all_sum float32[1024] #1834; ranks 0, 1, 3 are in all_gather int32[12] #1834}: the ranks
     * grouped by call, the smallest group first.
     */
    public static String mismatchText(Map<Integer, OperationFingerprint> calls) {
        Map<String, List<Integer>> groups = new LinkedHashMap<>();
        Map<String, OperationFingerprint> example = new LinkedHashMap<>();
        new TreeMap<>(calls).forEach((rank, f) -> {
            String key = f.call();
            groups.computeIfAbsent(key, k -> new ArrayList<>()).add(rank);
            example.putIfAbsent(key, f);
        });
        List<String> keys = new ArrayList<>(groups.keySet());
        keys.sort(Comparator.comparingInt((String k) -> groups.get(k).size()).thenComparingInt(k -> groups.get(k).getFirst()));
        List<String> parts = new ArrayList<>();
        for (String k : keys) {
            List<Integer> ranks = groups.get(k);
            long seq = -2;
            for (int r : ranks) {
                long s = calls.get(r).sequence();
                seq = seq == -2 || seq == s ? s : -1;
            }
            String number = seq >= 0 ? "#" + seq : "(collective #" + example.get(k).collective() + ")";
            parts.add(ranks(ranks) + (ranks.size() == 1 ? " is in " : " are in ") + k + " " + number);
        }
        return String.join("; ", parts);
    }

    /** {@code rank 2} or {@code ranks 0, 1, 3}. */
    static String ranks(List<Integer> ranks) {
        StringBuilder sb = new StringBuilder(ranks.size() == 1 ? "rank " : "ranks ");
        for (int i = 0; i < ranks.size(); i++) sb.append(i > 0 ? ", " : "").append(ranks.get(i));
        return sb.toString();
    }

    /**
     * The one report of a rank whose operation {@code mine} has waited {@code waitedMs}: which ranks it waits for and what
     * they were last seen doing. For a collective, the ranks not in it yet; for a send or recv, its peer.
     */
    public static String waitReport(int me, OperationFingerprint mine, long waitedMs, List<Seen> others, String deadline) {
        return waitReport(me, null, mine.peer(), mine, waitedMs, others, deadline);
    }

    /**
     * The same for an operation of a group made by {@code split} ({@code group} its label, null for the world group):
     * ranks are the job's, {@code peer} is the job rank of a send or recv's peer (the fingerprint numbers it in the group).
     */
    public static String waitReport(int me, String group, int peer, OperationFingerprint mine, long waitedMs, List<Seen> others,
                                    String deadline) {
        List<String> notIn = new ArrayList<>();
        List<Integer> in = new ArrayList<>();
        for (Seen s : others) {
            if (s.rank() == me) continue;
            boolean inIt;
            if (mine.isCollective()) {
                inIt = s.running() != null && s.running().isCollective() && s.running().collective() == mine.collective();
            } else {
                if (s.rank() != peer) continue;
                inIt = false;
            }
            if (inIt) in.add(s.rank());
            else notIn.add("rank " + s.rank() + " " + s.where() + ": " + doing(s));
        }
        StringBuilder sb = new StringBuilder("jdist rank " + me + ": " + mine.describe() + (group == null ? "" : " of group " + group)
                + " has waited " + seconds(waitedMs) + " for ");
        if (mine.isCollective()) {
            if (notIn.isEmpty()) {
                sb.append("data: every rank is in it (").append(ranks(in)).append(" and this one), so the bytes are slow to"
                        + " arrive (a slow or lossy network)");
            } else {
                sb.append(notIn.size() == 1 ? "1 rank not in it yet: " : notIn.size() + " ranks not in it yet: ")
                        .append(String.join("; ", notIn));
                if (!in.isEmpty()) sb.append(". In it already: ").append(ranks(in));
            }
        } else {
            sb.append(notIn.isEmpty() ? "rank " + peer : String.join("; ", notIn));
        }
        sb.append(". It waits up to ").append(deadline).append(" (JDIST_TIMEOUT) while the heartbeat says its peers are alive;"
                + " a peer that is gone is reported within JDIST_HEARTBEAT.");
        return sb.toString();
    }

    private static String doing(Seen s) {
        if (s.left()) return "closed its group";
        String alive = "alive (heard " + seconds(s.heardAgoMs()) + " ago), ";
        if (s.elsewhere() != null) return alive + "in no operation of this group: " + s.elsewhere();
        if (s.running() != null) return alive + "in " + s.running().describe() + " for " + seconds(s.sinceMs() + s.heardAgoMs());
        if (s.last() != null) return alive + "idle since " + s.last().describe() + " ended " + seconds(s.sinceMs() + s.heardAgoMs()) + " ago";
        return alive + "no operation yet";
    }

    static String seconds(long ms) {
        return ms < 10_000 ? String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0) : (ms / 1000) + " s";
    }
}
