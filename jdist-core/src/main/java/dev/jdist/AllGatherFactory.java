package dev.jdist;

/**
 * A custom side channel for the JACCL backend (MLX: {@code init(strict, "jaccl", factory)},
 * docs/reference/collectives.md §4.2): called once as {@code create(rank, size)}; the function it returns must give
 * back the rank-ordered concatenation of every rank's bytes ({@code size * bytesPerRank} bytes).
 */
@FunctionalInterface
public interface AllGatherFactory {

    AllGather create(int rank, int size);

    /** One all-gather: {@code src} holds this rank's {@code bytesPerRank} bytes. */
    @FunctionalInterface
    interface AllGather {
        byte[] allGather(byte[] src, int bytesPerRank);
    }
}
