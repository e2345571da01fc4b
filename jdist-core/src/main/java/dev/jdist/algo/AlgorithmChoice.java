package dev.jdist.algo;

/**
 * How a group whose members are all jdist chooses each collective's algorithm (docs/reference/collectives.md §10.4):
 * what {@code GroupImpl.algorithmChoice()} gives, so that {@code jdist bench} can name the algorithm of each row and
 * {@code jdist bench --tune} can force each algorithm in turn, without knowing the backend.
 */
public interface AlgorithmChoice {

    /** The algorithm the next {@code kind} of {@code bytes} (counted as {@link CollectiveKind} says) will use. */
    Algorithm algorithmFor(CollectiveKind kind, long bytes);

    /** Which members share a host, as they published it. */
    HostLayout hostLayout();

    /**
     * Replaces the algorithm policy ({@code jdist bench --tune}). Every member must call it with the same policy between
     * the same two operations.
     */
    void useAlgorithmPolicy(AlgorithmPolicy policy);
}
