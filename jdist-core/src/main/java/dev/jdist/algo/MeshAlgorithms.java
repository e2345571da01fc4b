package dev.jdist.algo;

import dev.jdist.mesh.MeshSchedule;

/** The one switch from (collective, algorithm) to a schedule builder, for the algorithms that run over the mesh. */
public final class MeshAlgorithms {
    private MeshAlgorithms() {}

    /**
     * Rank {@code r}'s schedule of an all_sum/max/min of {@code elements} elements of {@code itemSize} bytes
     * ({@link Algorithm#RD} or {@link Algorithm#RHD}).
     */
    public static MeshSchedule allReduce(Algorithm a, int r, int n, long elements, int itemSize) {
        return switch (a) {
            case RD -> RecursiveDoubling.allReduce(r, n, elements * itemSize);
            case RHD -> HalvingDoubling.allReduce(r, n, elements, itemSize);
            default -> throw new IllegalArgumentException(a + " is not a mesh all_reduce algorithm");
        };
    }

    /** Rank {@code r}'s schedule of an all_gather of {@code bytes} bytes per rank ({@link Algorithm#RD}, {@link Algorithm#BRUCK}). */
    public static MeshSchedule allGather(Algorithm a, int r, int n, long bytes) {
        return switch (a) {
            case RD -> RecursiveDoubling.allGather(r, n, bytes);
            case BRUCK -> Bruck.allGather(r, n, bytes);
            default -> throw new IllegalArgumentException(a + " is not a mesh all_gather algorithm");
        };
    }

    /** Rank {@code r}'s schedule of a sum_scatter of {@code n} chunks of {@code chunkBytes} ({@link Algorithm#RH}). */
    public static MeshSchedule sumScatter(Algorithm a, int r, int n, long chunkBytes) {
        if (a != Algorithm.RH) throw new IllegalArgumentException(a + " is not a mesh sum_scatter algorithm");
        return RecursiveHalving.sumScatter(r, n, chunkBytes);
    }
}
