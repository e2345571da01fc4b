package dev.jdist.algo;

/**
 * The one switch from (collective, algorithm) to a schedule builder, for the algorithms that run over the mesh. The
 * {@link HostLayout} says which members share a host; only the hierarchical algorithms look at it.
 */
public final class MeshAlgorithms {
    private MeshAlgorithms() {}

    /**
     * Rank {@code r}'s schedule of an all_sum/max/min of {@code elements} elements of {@code itemSize} bytes
     * ({@link Algorithm#RD}, {@link Algorithm#RHD}, {@link Algorithm#HIER}, {@link Algorithm#HIER_LEADER}).
     */
    public static MeshSchedule allReduce(Algorithm a, HostLayout layout, int r, long elements, int itemSize) {
        int n = layout.size();
        return switch (a) {
            case RD -> RecursiveDoubling.allReduce(r, n, elements * itemSize);
            case RHD -> HalvingDoubling.allReduce(r, n, elements, itemSize);
            case HIER, HIER_LEADER -> Hierarchical.allReduce(layout, r, elements, itemSize, Hierarchical.stripes(a, layout));
            default -> throw new IllegalArgumentException(a + " is not a mesh all_reduce algorithm");
        };
    }

    /**
     * Rank {@code r}'s schedule of an all_gather of {@code bytes} bytes per rank ({@link Algorithm#RD},
     * {@link Algorithm#BRUCK}, {@link Algorithm#HIER}, {@link Algorithm#HIER_LEADER}).
     */
    public static MeshSchedule allGather(Algorithm a, HostLayout layout, int r, long bytes) {
        int n = layout.size();
        return switch (a) {
            case RD -> RecursiveDoubling.allGather(r, n, bytes);
            case BRUCK -> Bruck.allGather(r, n, bytes);
            case HIER, HIER_LEADER -> Hierarchical.allGather(layout, r, bytes, Hierarchical.stripes(a, layout));
            default -> throw new IllegalArgumentException(a + " is not a mesh all_gather algorithm");
        };
    }

    /**
     * Rank {@code r}'s schedule of a sum_scatter of {@code n} chunks of {@code chunkBytes} ({@link Algorithm#RH},
     * {@link Algorithm#HIER}, {@link Algorithm#HIER_LEADER}).
     */
    public static MeshSchedule sumScatter(Algorithm a, HostLayout layout, int r, long chunkBytes) {
        return switch (a) {
            case RH -> RecursiveHalving.sumScatter(r, layout.size(), chunkBytes);
            case HIER, HIER_LEADER -> Hierarchical.sumScatter(layout, r, chunkBytes, Hierarchical.stripes(a, layout));
            default -> throw new IllegalArgumentException(a + " is not a mesh sum_scatter algorithm");
        };
    }
}
