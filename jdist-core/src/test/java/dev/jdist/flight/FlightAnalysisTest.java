package dev.jdist.flight;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The analysis of a failed job's flight records, from synthetic records of the cases it must tell apart. */
class FlightAnalysisTest {

    private static final Instant T0 = Instant.parse("2026-12-03T10:00:00Z");

    private static String at(double seconds) { return T0.plusMillis(Math.round(seconds * 1000)).toString(); }

    private static FlightDump.Operation done(long seq, String op, String dtype, int... shape) {
        return new FlightDump.Operation(seq, op, dtype, box(shape), null, 4L * shape.length, -1, false, FlightDump.COMPLETED,
                null, at(seq * 0.001), at(seq * 0.001 + 0.0005), 500L);
    }

    private static FlightDump.Operation in(long seq, double since, String op, String dtype, int... shape) {
        return new FlightDump.Operation(seq, op, dtype, box(shape), null, 4, -1, false, FlightDump.STARTED, null, at(since), null, null);
    }

    private static FlightDump.Operation failed(long seq, String op, String dtype, String error, int... shape) {
        return new FlightDump.Operation(seq, op, dtype, box(shape), null, 4, -1, false, FlightDump.FAILED, error, at(1), at(6), 5_000_000L);
    }

    private static FlightDump.Operation p2p(long seq, String op, int peer) {
        return new FlightDump.Operation(seq, op, "float32", List.of(4), null, 16, peer, false, FlightDump.COMPLETED, null, at(0), at(0), 1L);
    }

    private static List<Integer> box(int[] shape) {
        List<Integer> l = new ArrayList<>();
        for (int d : shape) l.add(d);
        return l;
    }

    private static FlightDump dump(int rank, double writtenAt, FlightDump.Failure failure, FlightDump.GroupRecord... groups) {
        return new FlightDump(FlightDump.FORMAT, FlightDump.VERSION, failure == null ? "signal SIGTERM" : "failure", at(writtenAt),
                "host" + rank, 1000 + rank, "0.1.0", 1024, failure, List.of(groups));
    }

    private static FlightDump.GroupRecord world(int rank, int size, FlightDump.Operation... ops) {
        return new FlightDump.GroupRecord("world", "ring", rank, size, ops[ops.length - 1].sequence() + 1, List.of(ops));
    }

    @Test
    void aRankBehindInAnOlderOperationIsNamedWithWhereTheOthersAre() {
        List<FlightDump> dumps = new ArrayList<>();
        for (int r : new int[] {0, 1, 3}) {
            dumps.add(dump(r, 20, null, world(r, 4, done(1833, "all_sum", "float32", 1024), done(1834, "all_sum", "float32", 1024),
                    in(1835, 8, "all_gather", "int32", 12))));
        }
        dumps.add(dump(2, 20, null, world(2, 4, done(1833, "all_sum", "float32", 1024), in(1834, 8, "all_sum", "float32", 1024))));

        List<String> report = FlightAnalysis.analyze(dumps, 4);

        assertThat(report).containsExactly(
                "group world (ring, 4 ranks): records from all 4 ranks",
                "rank 2 is in all_sum float32[1024] #1834; ranks 0, 1, 3 are in all_gather int32[12] #1835",
                "behind: rank 2 at #1834 (inside it for 12.0 s); ranks 0, 1, 3 are at #1835");
    }

    @Test
    void ranksCallingDifferentCollectivesAtTheSameSequenceDisagree() {
        List<FlightDump> dumps = new ArrayList<>();
        for (int r : new int[] {0, 1, 3}) {
            dumps.add(dump(r, 7, new FlightDump.Failure("world", r, 7, "all_gather int32[12]",
                    "DeadlineExceededException: made no progress for 5 s", at(6 + r * 0.01)),
                    world(r, 4, done(6, "all_sum", "float32", 1024), failed(7, "all_gather", "int32",
                            "DeadlineExceededException: made no progress for 5 s", 12))));
        }
        dumps.add(dump(2, 7, new FlightDump.Failure("world", 2, 7, "all_sum float32[1024]", "PeerLostException: rank 0 closed", at(6.5)),
                world(2, 4, done(6, "all_sum", "float32", 1024), failed(7, "all_sum", "float32", "PeerLostException: rank 0 closed", 1024))));

        List<String> report = FlightAnalysis.analyze(dumps, 4);

        assertThat(report).containsExactly(
                "group world (ring, 4 ranks): records from all 4 ranks",
                "ranks 0, 1, 3 failed in all_gather int32[12] #7 (DeadlineExceededException); "
                        + "rank 2 failed in all_sum float32[1024] #7 (PeerLostException)",
                "ranks disagree on operation #7: ranks 0, 1, 3 call all_gather int32[12]; rank 2 calls all_sum float32[1024]",
                "first failure: rank 0 of world on host0 (pid 1000) at 10:00:06.000 UTC, in all_gather int32[12] #7: "
                        + "DeadlineExceededException: made no progress for 5 s",
                "then: rank 1 (DeadlineExceededException, +0.010 s), rank 3 (DeadlineExceededException, +0.030 s), "
                        + "rank 2 (PeerLostException, +0.500 s)");
    }

    @Test
    void aStoppedRankLeavesNoRecordAndTheOthersWaitForIt() {
        List<FlightDump> dumps = new ArrayList<>();
        for (int r : new int[] {0, 2}) {
            String error = "DeadlineExceededException: made no progress for 2 s";
            dumps.add(dump(r, 3, new FlightDump.Failure("world", r, 40, "all_sum float32[8]", error, at(3)),
                    world(r, 3, done(39, "all_sum", "float32", 8), failed(40, "all_sum", "float32", error, 8))));
        }

        List<String> report = FlightAnalysis.analyze(dumps, 3);

        assertThat(report).contains(
                "group world (ring, 3 ranks): records from ranks 0, 2; none from rank 1",
                "ranks 0, 2 failed in all_sum float32[8] #40 (DeadlineExceededException)",
                "rank 1 left no flight record: stopped (SIGSTOP) or killed (SIGKILL) before writing one, not a jdist program, "
                        + "or running with JDIST_FLIGHT_RECORDER=0",
                "every rank with a record is inside an operation: the one without a record (rank 1) most likely never joined it");
        assertThat(report).noneMatch(l -> l.startsWith("behind") || l.startsWith("ranks disagree"));
    }

    @Test
    void aRankThatFinishedItsLastOperationAndNeverBeganTheNextIsComputing() {
        List<FlightDump> dumps = List.of(
                dump(0, 30, null, world(0, 2, done(4, "all_sum", "float32", 2), in(5, 1, "all_sum", "float32", 2))),
                dump(1, 30, null, world(1, 2, done(4, "all_sum", "float32", 2))));

        List<String> report = FlightAnalysis.analyze(dumps, 0);

        assertThat(report).containsExactly(
                "group world (ring, 2 ranks): records from all 2 ranks",
                "rank 1 has finished all_sum float32[2] #4 and is in no operation; rank 0 is in all_sum float32[2] #5",
                "behind: rank 1 at #4 (finished it 30.0 s before its record was written and has not begun #5: computing, "
                        + "or stuck outside jdist); rank 0 is at #5");
    }

    @Test
    void splitGroupsFollowTheWorldAndSendRecvIsNoted() {
        FlightDump.GroupRecord child0 = new FlightDump.GroupRecord("world/split@3(color=0)", "ring", 0, 2, 2,
                List.of(done(0, "all_sum", "int8", 7), in(1, 2, "all_max", "int8", 7)));
        FlightDump.GroupRecord child1 = new FlightDump.GroupRecord("world/split@3(color=0)", "ring", 1, 2, 2,
                List.of(done(0, "all_sum", "int8", 7), in(1, 2, "all_max", "int8", 7)));
        List<FlightDump> dumps = List.of(
                dump(0, 5, null, child0, world(0, 2, p2p(2, "send", 1), done(3, "split", null))),
                dump(1, 5, null, child1, world(1, 2, p2p(2, "recv", 0), done(3, "split", null))));

        List<String> report = FlightAnalysis.analyze(dumps, 2);

        assertThat(report).containsExactly(
                "group world (ring, 2 ranks): records from all 2 ranks",
                "ranks 0, 1 have finished split #3 and are in no operation",
                "note: send and recv are numbered only on their two ranks, so after one the other ranks' sequence numbers differ by design",
                "group world/split@3(color=0) (ring, 2 ranks): records from all 2 ranks",
                "ranks 0, 1 are in all_max int8[7] #1");
    }

    @Test
    void ranksWithoutARecordAreExplainedByHowTheyEnded() {
        String error = "PeerLostException: rank 2 closed";
        List<FlightDump> dumps = List.of(dump(1, 3, new FlightDump.Failure("world", 1, 5, "all_sum float32[1024]", error, at(3)),
                world(1, 4, done(4, "all_sum", "float32", 8), failed(5, "all_sum", "float32", error, 1024))));
        var ends = java.util.Map.of(
                0, new FlightAnalysis.RankEnd(0, false), 1, new FlightAnalysis.RankEnd(1, false),
                2, new FlightAnalysis.RankEnd(0, false), 3, new FlightAnalysis.RankEnd(134, false));

        List<String> report = FlightAnalysis.analyze(dumps, 4, ends);

        assertThat(report).contains(
                "group world (ring, 4 ranks): records from rank 1; none from ranks 0, 2, 3",
                "ranks 0, 2 left no flight record: they exited with code 0 (a process that ends normally writes none)",
                "rank 3 exited with code 134 without a flight record: it failed outside jdist's operations (see its output)");
        assertThat(report).noneMatch(l -> l.contains("SIGSTOP") || l.contains("never joined"));

        var killed = java.util.Map.of(0, new FlightAnalysis.RankEnd(143, true));
        assertThat(FlightAnalysis.analyze(dumps, 4, killed)).contains("ranks 0, 2, 3 left no flight record: stopped (SIGSTOP) or killed "
                + "(SIGKILL) before writing one, not a jdist program, or running with JDIST_FLIGHT_RECORDER=0");
    }

    @Test
    void noRecordsNoReport() {
        assertThat(FlightAnalysis.analyze(List.of(), 4)).isEmpty();
    }
}
