package dev.jdist.bench;

/**
 * One row of a benchmark: an op at one size, timed on rank 0.
 *
 * @param bytes        the size column: bytes of the largest buffer (all_gather output, sum_scatter input), as nccl-tests
 * @param count        elements in that buffer
 * @param medianMicros median time of one operation
 * @param p99Micros    99th percentile time
 * @param algbwGBs     bytes / median time, GB/s (10^9)
 * @param busbwGBs     algbw × the op's bus factor
 * @param wrong        elements that differed from the expected result (checked after the timed iterations)
 * @param peakRssBytes the largest peak resident set size over the ranks, after this row
 * @param peakRssBytesPerRank each rank's peak resident set size after this row (JSON output; rank order)
 * @param algorithm    the algorithm that ran ({@code ring}, {@code rd}, {@code rhd}, {@code rh}, {@code bruck}:
 *                     docs/reference/collectives.md §10), or the backend's name where it chooses its own
 * @param hosts        how many hosts the ranks ran on (0: unknown)
 */
public record BenchResult(String op, String mode, long bytes, long count, String type, String redop, int ranks,
                          double medianMicros, double p99Micros, double algbwGBs, double busbwGBs, long wrong,
                          long peakRssBytes, long[] peakRssBytesPerRank, String algorithm, int hosts) {

    public BenchResult {
        algorithm = algorithm == null ? "" : algorithm;
        peakRssBytesPerRank = peakRssBytesPerRank == null ? new long[0] : peakRssBytesPerRank;
    }

    /** A row without the per-rank memory figures, the algorithm and the host count. */
    public BenchResult(String op, String mode, long bytes, long count, String type, String redop, int ranks,
                       double medianMicros, double p99Micros, double algbwGBs, double busbwGBs, long wrong, long peakRssBytes) {
        this(op, mode, bytes, count, type, redop, ranks, medianMicros, p99Micros, algbwGBs, busbwGBs, wrong, peakRssBytes,
                new long[0], "", 0);
    }
}
