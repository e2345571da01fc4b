package dev.jdist.liveness;

import dev.jdist.DType;
import dev.jdist.OperationFingerprint;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

class DiagnosisTest {

    static OperationFingerprint op(long seq, String name, DType dtype, int... shape) {
        return OperationFingerprint.of(seq, seq, name, dtype, shape, -1);
    }

    @Test
    void theIssuesExampleNamesBothCallsAndTheirRanks() {
        Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
        known.put(0, Arrays.asList(op(1834, "all_gather", DType.INT32, 12), op(1833, "all_sum", DType.FLOAT32, 1024)));
        known.put(1, Arrays.asList(op(1834, "all_gather", DType.INT32, 12), null));
        known.put(2, Arrays.asList(op(1834, "all_sum", DType.FLOAT32, 1024), op(1833, "all_sum", DType.FLOAT32, 1024)));
        known.put(3, Arrays.asList(null, op(1834, "all_gather", DType.INT32, 12)));
        Map<Integer, OperationFingerprint> calls = Diagnosis.mismatch(known, false).calls();
        assertThat(calls).containsOnlyKeys(0, 1, 2, 3);
        assertThat(Diagnosis.mismatchText(calls))
                .isEqualTo("rank 2 is in all_sum float32[1024] #1834; ranks 0, 1, 3 are in all_gather int32[12] #1834");
    }

    @Test
    void reportsHeardAtDifferentTimesAgreeWhenEveryRankCallsTheSame() {
        Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
        known.put(0, Arrays.asList(op(7, "all_sum", DType.FLOAT32, 4), op(6, "all_max", DType.INT8, 2)));
        known.put(1, Arrays.asList(op(6, "all_max", DType.INT8, 2), op(5, "all_gather", DType.FLOAT32, 1)));
        known.put(2, Arrays.asList(null, op(7, "all_sum", DType.FLOAT32, 4)));
        assertThat(Diagnosis.mismatch(known, false)).isNull();
    }

    @Test
    void sendsAndReceivesAreNeverComparedAsCollectives() {
        Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
        known.put(0, List.of(OperationFingerprint.of(3, 2, "send", DType.FLOAT32, new int[] {8}, 1)));
        known.put(2, List.of(op(2, "all_sum", DType.FLOAT32, 4)));
        assertThat(Diagnosis.mismatch(known, false)).isNull();
    }

    @Test
    void shapesCountOnlyWhenStrict() {
        Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
        known.put(0, List.of(op(1, "all_sum", DType.FLOAT32, 2, 3)));
        known.put(1, List.of(op(1, "all_sum", DType.FLOAT32, 6)));
        assertThat(Diagnosis.mismatch(known, false)).isNull();
        assertThat(Diagnosis.mismatch(known, true).calls()).containsOnlyKeys(0, 1);
    }

    @Test
    void aDifferenceFurtherBackThanTheReportsIsFoundThroughTheDigests() {
        // two ranks with the same calls at collective 57, but one called an extra all_max long before: their digests differ
        OperationFingerprint a = op(57, "all_sum", DType.FLOAT32, 4);
        OperationFingerprint b = dev.jdist.OperationFingerprintTest.withHistory(a, 12345);
        Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
        known.put(0, List.of(a));
        known.put(1, List.of(a));
        known.put(2, List.of(b));
        Diagnosis.Mismatch m = Diagnosis.mismatch(known, false);
        assertThat(m.calls()).containsOnlyKeys(0, 1, 2);
        assertThat(m.note()).contains("earlier collectives differ").contains("ranks 0, 1 / rank 2").contains("#57");
    }

    @Test
    void theWaitReportNamesTheRanksNotInTheCollectiveAndWhatTheyDo() {
        OperationFingerprint mine = op(1834, "all_sum", DType.FLOAT32, 1024);
        String r = Diagnosis.waitReport(0, mine, 61_000, List.of(
                new Diagnosis.Seen(1, "node1 (pid 11, 10.0.0.2)", op(1834, "all_sum", DType.FLOAT32, 1024), null, 300, 60_000, false),
                new Diagnosis.Seen(2, "node2 (pid 12, 10.0.0.3)", null, op(1833, "all_gather", DType.INT32, 12), 400, 61_000, false),
                new Diagnosis.Seen(3, "node3 (pid 13, 10.0.0.4)", null, null, 200, 0, true)), "1800 s");
        assertThat(r).startsWith("jdist rank 0: all_sum float32[1024] #1834 has waited 61 s for 2 ranks not in it yet: ")
                .contains("rank 2 node2 (pid 12, 10.0.0.3): alive (heard 0.4 s ago), idle since all_gather int32[12] #1833 ended 61 s ago")
                .contains("rank 3 node3 (pid 13, 10.0.0.4): closed its group")
                .contains("In it already: rank 1")
                .contains("1800 s (JDIST_TIMEOUT)");
    }

    @Test
    void aSplitGroupsReportNamesTheGroupJobRanksAndWhatMembersDoElsewhere() {
        OperationFingerprint mine = op(7, "all_sum", DType.FLOAT32, 8);
        String r = Diagnosis.waitReport(4, "world/split@2(color=0)", -1, mine, 65_000, List.of(
                new Diagnosis.Seen(0, "node0 (pid 10, 10.0.0.1)", null, null, 100, 0, false,
                        "in all_gather int32[12] #40 of the world group for 64 s"),
                new Diagnosis.Seen(2, "node2 (pid 12, 10.0.0.3)", op(7, "all_sum", DType.FLOAT32, 8), null, 100, 64_000, false)),
                "1800 s");
        assertThat(r).startsWith("jdist rank 4: all_sum float32[8] #7 of group world/split@2(color=0) has waited 65 s for 1 rank not in it yet: ")
                .contains("rank 0 node0 (pid 10, 10.0.0.1): alive (heard 0.1 s ago), in no operation of this group: in all_gather int32[12] #40 "
                        + "of the world group for 64 s")
                .contains("In it already: rank 2");
        // a send or recv: its peer is named by job rank
        OperationFingerprint send = OperationFingerprint.of(3, 0, "send", DType.FLOAT32, new int[] {4}, 1);
        String p = Diagnosis.waitReport(4, "g", 6, send, 61_000, List.of(
                new Diagnosis.Seen(2, "x", null, null, 100, 0, false, "no operation of the world group yet"),
                new Diagnosis.Seen(6, "node6", null, op(2, "all_sum", DType.FLOAT32, 8), 100, 61_000, false)), "1800 s");
        assertThat(p).contains("rank 6 node6: alive").doesNotContain("rank 2 x");
    }

    @Test
    void whenEveryRankIsInItTheReportSaysTheDataIsSlow() {
        OperationFingerprint mine = op(5, "all_gather", DType.UINT8, 1 << 20);
        String r = Diagnosis.waitReport(1, mine, 90_000, List.of(
                new Diagnosis.Seen(0, "a", op(5, "all_gather", DType.UINT8, 1 << 20), null, 100, 1000, false)), "1800 s");
        assertThat(r).contains("every rank is in it (rank 0 and this one)");
    }
}
