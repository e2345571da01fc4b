package dev.jdist.bench;

import dev.jdist.algo.Algorithm;
import dev.jdist.algo.AlgorithmRules;
import dev.jdist.algo.AlgorithmRules.Hosts;
import dev.jdist.algo.AlgorithmRules.Rule;
import dev.jdist.algo.CollectiveKind;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Turns the rows of a {@code jdist bench --tune} run into rules (docs/reference/collectives.md §10.9), pure: for each collective,
 * the algorithm of each measured size, chosen so that the total slowdown against the fastest of every size is least
 * with a cost per change of algorithm (a noisy row does not split a run into pieces); each run of sizes with one
 * algorithm becomes one rule for this rank count and kind of topology. Sizes outside the measured range are left to
 * the rules that follow (jdist's defaults).
 */
public final class Tuner {
    /**
     * What one change of algorithm between neighbouring sizes costs, as a fraction of one size's best time: a row must be
     * 25 % slower than the other algorithm's before a run of sizes is split there (rows on a shared machine are noisy).
     */
    static final double SWITCH_COST = 0.25;

    private Tuner() {}

    /** The rules the rows of one tune run say; every row must come from the same job (ranks, hosts). */
    public static List<Rule> rules(List<BenchResult> rows) {
        if (rows.isEmpty()) return List.of();
        int ranks = rows.getFirst().ranks();
        int hosts = rows.getFirst().hosts();
        Hosts where = hosts == 0 ? Hosts.ANY : hosts == 1 ? Hosts.ONE : Hosts.SEVERAL;
        // kind -> size -> algorithm -> time (the ops of one kind add up)
        Map<CollectiveKind, TreeMap<Long, Map<Algorithm, Double>>> times = new EnumMap<>(CollectiveKind.class);
        for (BenchResult r : rows) {
            if (r.ranks() != ranks || r.hosts() != hosts) throw new IllegalArgumentException("rows of different jobs: " + r);
            CollectiveKind kind = BenchWorker.kindOf(BenchOp.parse(r.op()));
            Algorithm a = Algorithm.byName(r.algorithm());
            if (kind == null || a == null || !a.supports(kind)) continue;
            times.computeIfAbsent(kind, k -> new TreeMap<>()).computeIfAbsent(r.bytes(), b -> new EnumMap<>(Algorithm.class))
                    .merge(a, Math.max(r.medianMicros(), 1e-3), Double::sum);
        }
        List<Rule> out = new ArrayList<>();
        for (Map.Entry<CollectiveKind, TreeMap<Long, Map<Algorithm, Double>>> e : times.entrySet()) {
            out.addAll(rulesFor(e.getKey(), e.getValue(), ranks, where));
        }
        return out;
    }

    private static List<Rule> rulesFor(CollectiveKind kind, TreeMap<Long, Map<Algorithm, Double>> bySize, int ranks, Hosts where) {
        Set<Algorithm> algos = new LinkedHashSet<>();
        for (Map<Algorithm, Double> m : bySize.values()) algos.addAll(m.keySet());
        // only sizes where every algorithm was measured
        List<Long> sizes = new ArrayList<>();
        for (Map.Entry<Long, Map<Algorithm, Double>> e : bySize.entrySet()) if (e.getValue().keySet().containsAll(algos)) sizes.add(e.getKey());
        if (sizes.isEmpty()) return List.of();
        List<Algorithm> as = List.copyOf(algos);
        int k = sizes.size();
        int m = as.size();
        double[][] cost = new double[k][m];
        int[][] from = new int[k][m];
        for (int i = 0; i < k; i++) {
            Map<Algorithm, Double> t = bySize.get(sizes.get(i));
            double best = t.values().stream().mapToDouble(Double::doubleValue).min().orElse(1);
            for (int a = 0; a < m; a++) {
                double c = t.get(as.get(a)) / best - 1;
                if (i == 0) {
                    cost[i][a] = c;
                    continue;
                }
                int arg = a;
                double min = cost[i - 1][a];
                for (int b = 0; b < m; b++) {
                    if (b != a && cost[i - 1][b] + SWITCH_COST < min) {
                        min = cost[i - 1][b] + SWITCH_COST;
                        arg = b;
                    }
                }
                cost[i][a] = c + min;
                from[i][a] = arg;
            }
        }
        int[] choice = new int[k];
        int last = 0;
        for (int a = 1; a < m; a++) if (cost[k - 1][a] < cost[k - 1][last]) last = a;
        choice[k - 1] = last;
        for (int i = k - 1; i > 0; i--) choice[i - 1] = from[i][choice[i]];
        List<Rule> rules = new ArrayList<>();
        int start = 0;
        for (int i = 1; i <= k; i++) {
            if (i < k && choice[i] == choice[start]) continue;
            long min = start == 0 ? 0 : sizes.get(start - 1) + 1;
            rules.add(new Rule(kind, as.get(choice[start]), ranks, ranks, min, sizes.get(i - 1), where));
            start = i;
        }
        return rules;
    }

    /**
     * {@code fresh} ahead of what {@code existing} (null: nothing) says about other rank counts, topologies and
     * collectives: an existing rule for exactly the rank count, topology and collective just measured is replaced.
     */
    public static AlgorithmRules merge(AlgorithmRules existing, List<Rule> fresh, String comment) {
        List<Rule> all = new ArrayList<>(fresh);
        if (existing != null) {
            for (Rule old : existing.rules()) {
                boolean replaced = fresh.stream().anyMatch(f -> f.op() == old.op() && f.hosts() == old.hosts()
                        && old.minRanks() == f.minRanks() && old.maxRanks() == f.maxRanks());
                if (!replaced) all.add(old);
            }
        }
        return new AlgorithmRules("jdist bench --tune", comment, all);
    }
}
