package dev.jdist.algo;

import dev.jdist.ConfigException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;

/**
 * How a group of jdist ranks chooses the algorithm of each collective (docs/reference/collectives.md §10.9): {@code JDIST_ALGO}
 * forces one, else the first matching rule of {@code JDIST_ALGO_RULES}'s file, else of jdist's defaults, else the ring.
 * {@link #choose} is the one place that decides; every rank must decide alike, so the members compare
 * {@link #digest()}s when the mesh forms.
 */
public final class AlgorithmPolicy {
    public static final String VARIABLE = "JDIST_ALGO";
    public static final String RULES_VARIABLE = "JDIST_ALGO_RULES";

    private final Map<CollectiveKind, Algorithm> forced;
    private final AlgorithmRules userRules;      // null: none
    private final AlgorithmRules defaults;

    private AlgorithmPolicy(Map<CollectiveKind, Algorithm> forced, AlgorithmRules userRules, AlgorithmRules defaults) {
        this.forced = forced.isEmpty() ? Map.of() : new EnumMap<>(forced);
        this.userRules = userRules;
        this.defaults = defaults;
    }

    /** The defaults alone: nothing forced, no rules file. */
    public static AlgorithmPolicy defaults() {
        return new AlgorithmPolicy(Map.of(), null, AlgorithmRules.defaults());
    }

    /** {@code forced} and {@code rules} (null: none) ahead of {@code defaults}; for tests and the tuner. */
    public static AlgorithmPolicy of(Map<CollectiveKind, Algorithm> forced, AlgorithmRules rules, AlgorithmRules defaults) {
        return new AlgorithmPolicy(forced, rules, defaults);
    }

    /** Reads {@code JDIST_ALGO} and {@code JDIST_ALGO_RULES}; a bad value is a {@link ConfigException} naming it. */
    public static AlgorithmPolicy fromEnvironment(Map<String, String> env) {
        Map<CollectiveKind, Algorithm> forced = parseForced(env.get(VARIABLE));
        String rules = env.get(RULES_VARIABLE);
        AlgorithmRules user = rules == null || rules.isBlank() ? null : AlgorithmRules.read(Path.of(rules.strip()));
        return new AlgorithmPolicy(forced, user, AlgorithmRules.defaults());
    }

    /**
     * {@code JDIST_ALGO}: unset, empty or {@code auto} forces nothing; one algorithm name forces it for every collective
     * that has it ({@code rd}: all_reduce and all_gather); {@code op=name} pairs, comma-separated, force per collective
     * ({@code all_reduce=rhd,all_gather=bruck}).
     */
    static Map<CollectiveKind, Algorithm> parseForced(String text) {
        Map<CollectiveKind, Algorithm> forced = new EnumMap<>(CollectiveKind.class);
        if (text == null || text.isBlank() || text.strip().equalsIgnoreCase("auto")) return forced;
        String t = text.strip();
        if (!t.contains("=") && !t.contains(",")) {
            Algorithm a = Algorithm.byName(t);
            if (a == null) throw bad(text, "\"" + t + "\" is not an algorithm");
            for (CollectiveKind k : CollectiveKind.values()) if (a.supports(k)) forced.put(k, a);
            return forced;
        }
        for (String item : t.split(",")) {
            String[] kv = item.split("=", -1);
            if (kv.length != 2 || kv[0].isBlank() || kv[1].isBlank()) {
                throw bad(text, "\"" + item.strip() + "\" is not op=algorithm");
            }
            CollectiveKind k = CollectiveKind.byName(kv[0]);
            if (k == null) {
                throw bad(text, "\"" + kv[0].strip() + "\" is not an operation (all_reduce, all_gather, sum_scatter; all_reduce "
                        + "covers all_sum, all_max and all_min)");
            }
            Algorithm a = Algorithm.byName(kv[1]);
            if (a == null || !a.supports(k)) {
                throw bad(text, "\"" + kv[1].strip() + "\" is not an " + k + " algorithm (" + Algorithm.namesFor(k) + ")");
            }
            if (forced.put(k, a) != null) throw bad(text, k + " is named twice");
        }
        return forced;
    }

    private static ConfigException bad(String text, String what) {
        return new ConfigException(VARIABLE + "=\"" + text + "\": " + what + ". Use auto (the default), one algorithm for every "
                + "collective that has it (" + Algorithm.allNames() + "), or op=algorithm pairs such as "
                + "all_reduce=rhd,all_gather=bruck,sum_scatter=rh (all_reduce: " + Algorithm.namesFor(CollectiveKind.ALL_REDUCE)
                + "; all_gather: " + Algorithm.namesFor(CollectiveKind.ALL_GATHER) + "; sum_scatter: "
                + Algorithm.namesFor(CollectiveKind.SUM_SCATTER) + ")");
    }

    /** This policy with {@code kind} forced to {@code algorithm} (the tuner measures each one so). */
    public AlgorithmPolicy forcing(CollectiveKind kind, Algorithm algorithm) {
        if (!algorithm.supports(kind)) throw new IllegalArgumentException(algorithm + " is not an " + kind + " algorithm");
        Map<CollectiveKind, Algorithm> f = new EnumMap<>(CollectiveKind.class);
        f.putAll(forced);
        f.put(kind, algorithm);
        return new AlgorithmPolicy(f, userRules, defaults);
    }

    /** Whether anything is forced or a rules file is given (the user asked for something). */
    public boolean configured() { return !forced.isEmpty() || userRules != null; }

    /**
     * The algorithm of one operation: of {@code kind}, {@code bytes} counted as {@link CollectiveKind} says, on
     * {@code topology}. Forced first; then, on a ring over shared memory, the ring (its pipelined schedule over the
     * shared-memory links was not beaten by the mesh's rounds); then the user's rules; then, when the group spans several
     * hosts and some host runs more than one member, the hierarchy (§10.11); then jdist's default rules.
     */
    public Algorithm choose(CollectiveKind kind, long bytes, Topology topology) {
        Algorithm f = forced.get(kind);
        if (f != null) return f;
        if (topology.sharedMemoryRing()) return Algorithm.RING;
        AlgorithmRules.Rule r = userRules == null ? null : userRules.match(kind, bytes, topology);
        if (r == null && topology.hostsShared()) return Algorithm.HIER;
        if (r == null) r = defaults.match(kind, bytes, topology);
        return r == null ? Algorithm.RING : r.algorithm();
    }

    /**
     * What every member must share: 8 bytes of SHA-256 over the forced choices, the user's rules and the default rules
     * (their rules, not their comment), so that ranks of jdist builds whose defaults differ refuse to form a group
     * instead of choosing different algorithms for one operation.
     */
    public byte[] digest() {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(canonical().getBytes(StandardCharsets.UTF_8));
            return Arrays.copyOf(d, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available in this JVM", e);
        }
    }

    private String canonical() {
        StringBuilder sb = new StringBuilder("forced:");
        for (CollectiveKind k : CollectiveKind.values()) {
            Algorithm a = forced.get(k);
            if (a != null) sb.append(k.text()).append('=').append(a.text()).append(',');
        }
        sb.append("\nrules:").append(userRules == null ? "" : userRules.toJson());
        sb.append("\ndefaults:").append(new AlgorithmRules("", "", defaults.rules()).toJson());
        return sb.toString();
    }

    /** For messages: what was asked for. */
    public String describe() {
        StringBuilder sb = new StringBuilder();
        if (!forced.isEmpty()) {
            sb.append(VARIABLE).append(" forces ");
            for (CollectiveKind k : CollectiveKind.values()) {
                if (forced.containsKey(k)) sb.append(k.text()).append('=').append(forced.get(k).text()).append(' ');
            }
        }
        if (userRules != null) sb.append("rules from ").append(userRules.source()).append(' ');
        return sb.isEmpty() ? "jdist's default rules" : sb.toString().strip();
    }
}
