package dev.jdist;

import dev.jdist.flight.OperationSummary;
import dev.jdist.flight.OperationTrace;
import dev.jdist.ring.RingTestSupport;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every group operation is a {@code dev.jdist.Operation} event in a JDK Flight Recorder recording: a
 * 2-rank ring in this JVM runs each kind of operation, the recording is written to a file and read
 * back with {@code jdk.jfr.consumer}, and each rank's events are checked field by field.
 */
@Timeout(120)
class OperationEventTest {

    @TempDir
    Path dir;

    /** operation, dtype, bytes, peer, async, group, in issue order on one rank. */
    record Expected(String operation, String dtype, long bytes, int peer, boolean async, String group) {}

    @Test
    void everyOperationOfARingIsRecordedWithItsFields() throws Exception {
        Path hostfile = RingTestSupport.hostfile(dir, 2, 1);
        Path file = dir.resolve("ops.jfr");
        try (Recording recording = new Recording()) {
            recording.enable(OperationEvent.NAME);
            recording.start();
            RingTestSupport.onEveryRank(hostfile, 2, Map.of(), impl -> {
                Group g = new Group(impl, OperationTrace.WORLD);
                int r = g.rank();
                g.allSum(Array.ones(DType.FLOAT32, 1000));
                g.allMax(Array.ones(DType.INT32, 10));
                g.allMin(Array.ones(DType.BFLOAT16, 10));
                g.allGather(Array.ones(DType.FLOAT64, 3));
                g.sumScatter(Array.ones(DType.FLOAT32, 4, 2));
                if (r == 0) g.send(Array.ones(DType.UINT8, 5), 1);
                else g.recv(new int[] {5}, DType.UINT8, 0);
                g.allSumAsync(Array.ones(DType.INT64, 7)).join();
                Group child = g.split(0);       // both ranks: one child group of 2
                child.allSum(Array.ones(DType.INT16, 8));
                return r;
            });
            recording.stop();
            recording.dump(file);
        }

        // The summary tool reads the same file: one row per rank, group, operation and dtype.
        List<OperationSummary.Row> rows = OperationSummary.rows(List.of(file));
        assertThat(rows).hasSize(18);
        assertThat(rows).filteredOn(row -> row.operation().equals("all_sum") && row.dtype().equals("float32"))
                .allSatisfy(row -> assertThat(row.bytesAndErrors()[0]).isEqualTo(4000));
        java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();
        OperationSummary.print(rows, new java.io.PrintStream(text, true, java.nio.charset.StandardCharsets.UTF_8));
        assertThat(text.toString(java.nio.charset.StandardCharsets.UTF_8)).contains("median(us)").contains("sum_scatter");

        List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals(OperationEvent.NAME)).toList();
        String child = OperationTrace.splitLabel(OperationTrace.WORLD, 7, 0);
        for (int rank = 0; rank < 2; rank++) {
            int r = rank;
            List<RecordedEvent> mine = new ArrayList<>(events.stream().filter(e -> e.getInt("rank") == r).toList());
            mine.sort(Comparator.comparing((RecordedEvent e) -> e.getString("group")).thenComparingLong(e -> e.getLong("sequence")));
            List<Expected> want = List.of(
                    new Expected("all_sum", "float32", 4000, -1, false, "world"),
                    new Expected("all_max", "int32", 40, -1, false, "world"),
                    new Expected("all_min", "bfloat16", 20, -1, false, "world"),
                    new Expected("all_gather", "float64", 24, -1, false, "world"),
                    new Expected("sum_scatter", "float32", 32, -1, false, "world"),
                    new Expected(r == 0 ? "send" : "recv", "uint8", 5, 1 - r, false, "world"),
                    new Expected("all_sum", "int64", 56, -1, true, "world"),
                    new Expected("split", null, 0, -1, false, "world"),
                    new Expected("all_sum", "int16", 16, -1, false, child));
            List<Expected> got = new ArrayList<>();
            for (RecordedEvent e : mine) {
                got.add(new Expected(e.getString("operation"), e.getString("dtype"), e.getLong("bytes"), e.getInt("peer"),
                        e.getBoolean("async"), e.getString("group")));
                assertThat(e.getString("backend")).isEqualTo("ring");
                assertThat(e.getInt("size")).isEqualTo(2);
                assertThat(e.getString("error")).isNull();
                assertThat(e.getDuration()).isPositive().isLessThan(Duration.ofSeconds(60));
            }
            // the rows, then the order: sequence numbers count each group's operations from 0 in issue order
            assertThat(got).as("rank " + r).containsExactlyInAnyOrderElementsOf(want);
            List<Long> worldSeq = mine.stream().filter(e -> e.getString("group").equals("world")).map(e -> e.getLong("sequence")).toList();
            assertThat(worldSeq).as("rank " + r + " world sequence numbers").containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
            assertThat(mine.stream().filter(e -> e.getString("group").equals(child)).map(e -> e.getLong("sequence")).toList())
                    .containsExactly(0L);
            assertThat(mine.stream().filter(e -> e.getLong("sequence") == 0 && e.getString("group").equals("world"))
                    .map(e -> e.getString("operation")).toList()).containsExactly("all_sum");
        }
    }

    @Test
    void aFailedOperationCarriesItsErrorAndTheNextOneStillRecords() throws Exception {
        RecordingGroupImpl impl = new RecordingGroupImpl("fake", 1, 2);
        impl.beforeOp = op -> { if (op.startsWith("allGather")) throw new PeerLostException("rank 0 went away"); };
        Path file = dir.resolve("fail.jfr");
        try (Recording recording = new Recording(); Group g = new Group(impl, OperationTrace.WORLD)) {
            recording.enable(OperationEvent.NAME);
            recording.start();
            assertThatThrownBy(() -> g.allGather(Array.ones(DType.FLOAT32, 2))).isInstanceOf(PeerLostException.class);
            g.allSum(Array.ones(DType.FLOAT32, 2));
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals(OperationEvent.NAME))
                .sorted(Comparator.comparingLong(e -> e.getLong("sequence"))).toList();
        assertThat(events).hasSize(2);
        assertThat(events.get(0).getString("operation")).isEqualTo("all_gather");
        assertThat(events.get(0).getString("error")).isEqualTo("PeerLostException: rank 0 went away");
        assertThat(events.get(0).getString("backend")).isEqualTo("fake");
        assertThat(events.get(1).getString("operation")).isEqualTo("all_sum");
        assertThat(events.get(1).getString("error")).isNull();
        assertThat(events.get(1).getLong("sequence")).isEqualTo(1);
    }

    @Test
    void aRecordingWithoutTheEventHasNone() throws Exception {
        RecordingGroupImpl impl = new RecordingGroupImpl("fake", 0, 2);
        Path file = dir.resolve("off.jfr");
        try (Recording recording = new Recording(); Group g = new Group(impl, OperationTrace.WORLD)) {
            recording.disable(OperationEvent.NAME);
            recording.enable("jdk.ThreadSleep").withThreshold(Duration.ZERO);
            recording.start();
            for (int i = 0; i < 100; i++) g.allSum(Array.ones(DType.FLOAT32, 2));
            TimeUnit.MILLISECONDS.sleep(1);
            recording.stop();
            recording.dump(file);
        }
        assertThat(RecordingFile.readAllEvents(file)).noneMatch(e -> e.getEventType().getName().equals(OperationEvent.NAME))
                .anyMatch(e -> e.getEventType().getName().equals("jdk.ThreadSleep"));
    }
}
