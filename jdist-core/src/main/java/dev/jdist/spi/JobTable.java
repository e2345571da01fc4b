package dev.jdist.spi;

import java.util.List;
import java.util.Optional;

/**
 * Every rank's {@link RankRecord}, in rank order, after the agreement check passed: who the members of a group are,
 * where they can be reached, what they can do. A table exists only when every rank published a record, so
 * {@link #allJdist()} is true for every table; a group formed from MLX variables without a job token has none
 * (MLX peers may be in it).
 *
 * <p>jdist-internal: heartbeats, connections between any two ranks and algorithm choices read it.
 */
public final class JobTable {
    private final String source;
    private final List<RankRecord> ranks;
    private final KeyValueStore store;

    public JobTable(String source, List<RankRecord> ranks, KeyValueStore store) {
        this.source = source;
        this.ranks = List.copyOf(ranks);
        this.store = store;
        for (int q = 0; q < this.ranks.size(); q++) {
            if (this.ranks.get(q).rank() != q) {
                throw new IllegalArgumentException("record " + q + " of the job table is rank " + this.ranks.get(q).rank());
            }
        }
    }

    /** How the job was found ({@code torchrun}, {@code slurm}, {@code hostfile}, {@code exchange}, ...). */
    public String source() { return source; }

    public int size() { return ranks.size(); }

    public RankRecord rank(int q) { return ranks.get(q); }

    public List<RankRecord> ranks() { return ranks; }

    /** True: every rank published a jdist record (MLX peers publish none). */
    public boolean allJdist() { return true; }

    /** Whether ranks {@code a} and {@code b} run on one host (same kernel boot id). */
    public boolean sameHost(int a, int b) { return ranks.get(a).bootId().equals(ranks.get(b).bootId()); }

    /** Whether every rank runs on one host. */
    public boolean oneHost() {
        for (int q = 1; q < ranks.size(); q++) if (!sameHost(0, q)) return false;
        return true;
    }

    /** The rendezvous store, while the group that owns this table is open; empty when the job met without one. */
    public Optional<KeyValueStore> store() { return Optional.ofNullable(store); }

    /** The same records with another store (or none). */
    public JobTable withStore(KeyValueStore newStore) { return new JobTable(source, ranks, newStore); }

    @Override
    public String toString() {
        return "JobTable[" + source + ", " + ranks.size() + " ranks]";
    }
}
