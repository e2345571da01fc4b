package dev.jdist.flight;

import dev.jdist.OperationEvent;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a job's time went, from JDK Flight Recorder recordings of its ranks: one row per rank, group,
 * operation and dtype with the count, the bytes, the total time and the median, p99 and largest
 * durations of the {@code dev.jdist.Operation} events (docs/observability.md).
 *
 * <pre>java -cp jdist.jar dev.jdist.flight.OperationSummary rank0.jfr rank1.jfr ...</pre>
 */
public final class OperationSummary {
    private OperationSummary() {}

    /** One row's key and its durations in nanoseconds. */
    public record Row(int rank, String group, String operation, String dtype, String backend, List<Long> nanos, long[] bytesAndErrors) {}

    /** Reads the {@code dev.jdist.Operation} events of {@code files} into rows, largest total time first. */
    public static List<Row> rows(List<Path> files) throws IOException {
        Map<String, Row> rows = new LinkedHashMap<>();
        for (Path f : files) {
            for (RecordedEvent e : RecordingFile.readAllEvents(f)) {
                if (!e.getEventType().getName().equals(OperationEvent.NAME)) continue;
                String dtype = e.getString("dtype");
                Row row = rows.computeIfAbsent(e.getInt("rank") + "\n" + e.getString("group") + "\n" + e.getString("operation")
                                + "\n" + dtype + "\n" + e.getString("backend"),
                        k -> new Row(e.getInt("rank"), e.getString("group"), e.getString("operation"), dtype == null ? "-" : dtype,
                                e.getString("backend"), new ArrayList<>(), new long[2]));
                row.nanos().add(e.getDuration().toNanos());
                row.bytesAndErrors()[0] += e.getLong("bytes");
                if (e.getString("error") != null) row.bytesAndErrors()[1]++;
            }
        }
        List<Row> out = new ArrayList<>(rows.values());
        for (Row r : out) r.nanos().sort(null);
        out.sort(Comparator.comparingLong((Row r) -> -total(r)).thenComparingInt(Row::rank));
        return out;
    }

    private static long total(Row r) {
        long t = 0;
        for (long n : r.nanos()) t += n;
        return t;
    }

    /** The {@code q}-quantile (nearest rank) of sorted nanoseconds, in microseconds. */
    private static double micros(List<Long> sorted, double q) {
        int index = Math.max(0, (int) Math.ceil(q * sorted.size()) - 1);
        return sorted.get(index) / 1e3;
    }

    public static void print(List<Row> rows, PrintStream out) {
        out.printf("%4s  %-24s  %-11s  %-9s  %-7s  %8s  %12s  %10s  %10s  %10s  %10s  %6s%n", "rank", "group", "operation",
                "dtype", "backend", "count", "bytes", "total(ms)", "median(us)", "p99(us)", "max(us)", "errors");
        for (Row r : rows) {
            out.printf("%4d  %-24s  %-11s  %-9s  %-7s  %8d  %12d  %10.3f  %10.1f  %10.1f  %10.1f  %6d%n", r.rank(), r.group(),
                    r.operation(), r.dtype(), r.backend(), r.nanos().size(), r.bytesAndErrors()[0], total(r) / 1e6,
                    micros(r.nanos(), 0.5), micros(r.nanos(), 0.99), r.nanos().getLast() / 1e3, r.bytesAndErrors()[1]);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 0) {
            System.err.println("usage: java -cp jdist.jar dev.jdist.flight.OperationSummary RECORDING.jfr...  (one recording per rank, or one for all)");
            System.exit(2);
        }
        List<Path> files = new ArrayList<>();
        for (String a : args) {
            Path p = Path.of(a);
            if (!Files.isRegularFile(p)) {
                System.err.println("OperationSummary: " + a + " is not a file; give the .jfr files the ranks wrote "
                        + "(-XX:StartFlightRecording:filename=...)");
                System.exit(2);
            }
            files.add(p);
        }
        List<Row> rows = rows(files);
        if (rows.isEmpty()) {
            System.err.println("OperationSummary: no dev.jdist.Operation events in " + String.join(", ", args)
                    + "; record them with java -XX:StartFlightRecording:filename=rank.jfr ... (they are on by default)");
            System.exit(1);
        }
        print(rows, System.out);
    }
}
