package dev.jdist.algo;

import java.util.Locale;

/**
 * The collectives that choose an algorithm (docs/reference/collectives.md §10.9), and how each one's size is counted for the
 * choice: the bytes of the size column of {@code jdist bench} (nccl-tests' convention), so that measured crossovers go
 * into a rules file unchanged.
 */
public enum CollectiveKind {
    /** all_sum, all_max, all_min; size = the input's bytes. */
    ALL_REDUCE("all_reduce"),
    /** all_gather; size = the output's bytes ({@code n} × the input's). */
    ALL_GATHER("all_gather"),
    /** sum_scatter; size = the input's bytes ({@code n} × the output's). */
    SUM_SCATTER("sum_scatter");

    private final String text;

    CollectiveKind(String text) { this.text = text; }

    /** The name in {@code JDIST_ALGO} and rules files. */
    public String text() { return text; }

    /** By name, any case; null when unknown ({@code all_sum}, {@code all_max}, {@code all_min} are all {@code all_reduce}). */
    public static CollectiveKind byName(String name) {
        String t = name.strip().toLowerCase(Locale.ROOT);
        for (CollectiveKind k : values()) if (k.text.equals(t)) return k;
        return null;
    }

    @Override
    public String toString() { return text; }
}
