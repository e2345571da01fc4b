package dev.jdist.bench;

import java.util.List;
import java.util.Locale;

/** Renders results as nccl-tests-style text, CSV or JSON. */
public final class BenchTable {
    private BenchTable() {}

    static final String HEADER = String.format(Locale.ROOT, "%12s %12s %9s %6s %13s %11s %11s %9s %9s %7s %10s %6s",
            "size", "count", "type", "redop", "mode", "median(us)", "p99(us)", "algbw", "busbw", "#wrong", "peakRSS", "algo");
    static final String UNITS = String.format(Locale.ROOT, "%12s %12s %9s %6s %13s %11s %11s %9s %9s %7s %10s %6s",
            "(B)", "(elements)", "", "", "", "", "", "(GB/s)", "(GB/s)", "", "(MiB)", "");

    /** The text table: one block per op, a header naming the op and the rank count; {@code algo} is the algorithm that ran. */
    public static String text(List<BenchResult> results) {
        StringBuilder sb = new StringBuilder();
        String currentOp = null;
        for (BenchResult r : results) {
            if (!r.op().equals(currentOp)) {
                currentOp = r.op();
                if (!sb.isEmpty()) sb.append('\n');
                sb.append("# ").append(r.op()).append(", ").append(r.ranks()).append(" ranks, ").append(r.type()).append('\n');
                sb.append('#').append(HEADER.substring(1)).append('\n');
                sb.append('#').append(UNITS.substring(1)).append('\n');
            }
            sb.append(row(r)).append('\n');
        }
        return sb.toString();
    }

    static String row(BenchResult r) {
        return String.format(Locale.ROOT, "%12d %12d %9s %6s %13s %11.1f %11.1f %9.3f %9.3f %7d %10.1f %6s",
                r.bytes(), r.count(), r.type(), r.redop(), r.mode(), r.medianMicros(), r.p99Micros(),
                r.algbwGBs(), r.busbwGBs(), r.wrong(), r.peakRssBytes() / 1048576.0, r.algorithm());
    }

    public static String csv(List<BenchResult> results) {
        StringBuilder sb = new StringBuilder("op,mode,ranks,size_bytes,count,type,redop,median_us,p99_us,algbw_GBps,busbw_GBps,wrong,"
                + "peak_rss_bytes,algorithm,hosts\n");
        for (BenchResult r : results) {
            sb.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%s,%s,%.3f,%.3f,%.4f,%.4f,%d,%d,%s,%d%n",
                    r.op(), r.mode(), r.ranks(), r.bytes(), r.count(), r.type(), r.redop(), r.medianMicros(),
                    r.p99Micros(), r.algbwGBs(), r.busbwGBs(), r.wrong(), r.peakRssBytes(), r.algorithm(), r.hosts()));
        }
        return sb.toString();
    }
}
