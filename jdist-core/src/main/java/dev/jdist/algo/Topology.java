package dev.jdist.algo;

/**
 * What the choice of an algorithm knows about where a group's members run (docs/reference/collectives.md §10.9). One record, so
 * that later rules (ranks per host, a hierarchy inside hosts) add fields here and conditions in {@link AlgorithmRules},
 * and {@link AlgorithmPolicy#choose} stays the one place that decides.
 *
 * @param ranks            the group's size
 * @param hosts            how many distinct hosts its members run on
 * @param sharedMemoryRing the ring moves its bytes through shared memory ({@code JDIST_TRANSPORT=shm})
 */
public record Topology(int ranks, int hosts, boolean sharedMemoryRing) {
    public Topology {
        if (ranks < 1 || hosts < 1 || hosts > ranks) {
            throw new IllegalArgumentException("a topology of " + ranks + " rank(s) on " + hosts + " host(s)");
        }
    }

    /** Every member on one host. */
    public boolean oneHost() { return hosts == 1; }

    /** Several hosts, and some host runs more than one member: where the hierarchical algorithms pay (§10.11). */
    public boolean hostsShared() { return hosts > 1 && ranks > hosts; }
}
