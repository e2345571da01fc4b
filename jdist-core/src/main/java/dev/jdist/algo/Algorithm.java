package dev.jdist.algo;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/** The algorithms a group of jdist ranks chooses from (docs/reference/collectives.md §10.5–§10.9), by the names users write. */
public enum Algorithm {
    /** The ring: MLX's schedules (§3.6, §3.7) and jdist's ring sum_scatter (§9), on the ring's own connections. */
    RING("ring", "the ring", EnumSet.allOf(CollectiveKind.class)),
    /**
     * The ring in one direction (§10.12): the same schedules with every part flowing r → r-1, one part per connection,
     * so a host's one link carries one flow each way instead of two that compete.
     */
    RING1("ring1", "the ring, one direction", EnumSet.allOf(CollectiveKind.class)),
    /** Recursive doubling (§10.5): fewest rounds, the whole vector in each. */
    RD("rd", "recursive doubling", EnumSet.of(CollectiveKind.ALL_REDUCE, CollectiveKind.ALL_GATHER)),
    /** Recursive halving, then doubling: Rabenseifner's all-reduce (§10.6). */
    RHD("rhd", "recursive halving and doubling (Rabenseifner)", EnumSet.of(CollectiveKind.ALL_REDUCE)),
    /** Recursive halving (§10.7): a reduce-scatter in log2 n rounds. */
    RH("rh", "recursive halving", EnumSet.of(CollectiveKind.SUM_SCATTER)),
    /** Bruck's all-gather (§10.8): ceil(log2 n) rounds for any n. */
    BRUCK("bruck", "Bruck's all-gather", EnumSet.of(CollectiveKind.ALL_GATHER)),
    /**
     * Hierarchical (§10.11): shared memory inside each host, the network between hosts, every member of a host owning a
     * stripe of the data (as many stripes as the smallest host has members).
     */
    HIER("hier", "hierarchical, striped", EnumSet.allOf(CollectiveKind.class)),
    /** Hierarchical with one stripe: one leader per host talks to the other hosts (§10.11). */
    HIER_LEADER("hier-leader", "hierarchical, one leader per host", EnumSet.allOf(CollectiveKind.class));

    private final String text;
    private final String description;
    private final Set<CollectiveKind> kinds;

    Algorithm(String text, String description, Set<CollectiveKind> kinds) {
        this.text = text;
        this.description = description;
        this.kinds = kinds;
    }

    /** The name in {@code JDIST_ALGO} and rules files. */
    public String text() { return text; }

    public String description() { return description; }

    /** Whether this runs on the ring's own connections ({@link #RING}, {@link #RING1}), not over the mesh. */
    public boolean onRing() { return this == RING || this == RING1; }

    /** Whether this is one of the hierarchical algorithms (§10.11), which need to know which members share a host. */
    public boolean hierarchical() { return this == HIER || this == HIER_LEADER; }

    /** Whether this algorithm implements {@code kind}. */
    public boolean supports(CollectiveKind kind) { return kinds.contains(kind); }

    /** By name, any case; null when unknown. */
    public static Algorithm byName(String name) {
        String t = name.strip().toLowerCase(Locale.ROOT);
        for (Algorithm a : values()) if (a.text.equals(t)) return a;
        return null;
    }

    /** The names of the algorithms that implement {@code kind}, for messages. */
    public static String namesFor(CollectiveKind kind) {
        List<String> names = new ArrayList<>();
        for (Algorithm a : values()) if (a.supports(kind)) names.add(a.text);
        return String.join(", ", names);
    }

    /** Every name, for messages. */
    public static String allNames() {
        List<String> names = new ArrayList<>();
        for (Algorithm a : values()) names.add(a.text);
        return String.join(", ", names);
    }

    @Override
    public String toString() { return text; }
}
