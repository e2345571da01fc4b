package dev.jdist.liveness;

import dev.jdist.DType;
import dev.jdist.OperationFingerprint;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.WatchedGroups;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class HeartbeatWireTest {
    private final HeartbeatWire wire = new HeartbeatWire(HeartbeatWire.key("token", WatchedGroups.loopbackTable(2)));

    @Test
    void aBeatComesBackWithEveryField() {
        OperationFingerprint running = OperationFingerprint.of(9, 8, "all_sum", DType.FLOAT32, new int[] {1024}, -1);
        OperationFingerprint last = OperationFingerprint.of(8, 7, "all_gather", DType.INT32, new int[] {12}, -1);
        Reason reason = Reason.silent(1, 3, PeerUnresponsiveException.State.STOPPED, 8123);
        byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, 1, 42L, 7L, 1500, running, last, java.util.List.of(running, last), null, reason));
        assertThat(b.length).isLessThan(HeartbeatWire.MAX_DATAGRAM);
        HeartbeatWire.Beat back = wire.decode(b, b.length);
        assertThat(back.rank()).isEqualTo(1);
        assertThat(back.incarnation()).isEqualTo(42L);
        assertThat(back.sequence()).isEqualTo(7L);
        assertThat(back.sinceMs()).isEqualTo(1500);
        assertThat(back.running().describe()).isEqualTo(running.describe());
        assertThat(back.last().describe()).isEqualTo(last.describe());
        assertThat(back.reason()).isEqualTo(reason);
        assertThat(back.recent()).extracting(OperationFingerprint::describe).containsExactly(running.describe(), last.describe());
        assertThat(back.splits()).isEmpty();
    }

    @Test
    void aSplitGroupsSectionComesBackWithOrWithoutItsOperations() {
        OperationFingerprint running = OperationFingerprint.of(3, 2, "all_sum", DType.FLOAT16, new int[] {64}, -1);
        OperationFingerprint last = OperationFingerprint.of(2, 1, "recv", DType.INT8, new int[] {4}, 1);
        for (HeartbeatWire.SplitActivity split : java.util.List.of(new HeartbeatWire.SplitActivity(-123456, 61_000, running, last),
                new HeartbeatWire.SplitActivity(5, 0, null, last), new HeartbeatWire.SplitActivity(6, 1, null, null))) {
            byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, 1, 42L, 7L, 10, null, null, null, java.util.List.of(split), null));
            assertThat(wire.decode(b, b.length).splits()).hasSize(1);
            HeartbeatWire.SplitActivity back = wire.decode(b, b.length).splits().get(0);
            assertThat(back.group()).isEqualTo(split.group());
            assertThat(back.sinceMs()).isEqualTo(split.sinceMs());
            assertThat(back.running() == null ? null : back.running().describe())
                    .isEqualTo(split.running() == null ? null : split.running().describe());
            assertThat(back.last() == null ? null : back.last().describe()).isEqualTo(split.last() == null ? null : split.last().describe());
            assertThat(back.recent()).isEmpty();
        }
    }

    @Test
    void aSplitGroupsRecentCollectivesComeBackBesideTheWorldGroups() {
        OperationFingerprint w = OperationFingerprint.of(40, 40, "all_gather", DType.INT32, new int[] {12}, -1);
        java.util.List<OperationFingerprint> splitRecent = new java.util.ArrayList<>();
        for (int i = 1; i <= 8; i++) splitRecent.add(OperationFingerprint.of(i, i, "all_sum", DType.FLOAT32, new int[] {i}, -1));
        byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, 1, 42L, 7L, 10, w, w, java.util.Collections.nCopies(8, w),
                java.util.List.of(new HeartbeatWire.SplitActivity(9, 3, splitRecent.get(7), splitRecent.get(6), splitRecent)), null));
        assertThat(b.length).isLessThan(HeartbeatWire.MAX_DATAGRAM);
        HeartbeatWire.Beat back = wire.decode(b, b.length);
        assertThat(back.recent()).hasSize(8);
        assertThat(back.splits().get(0).recent()).extracting(OperationFingerprint::describe)
                .containsExactlyElementsOf(splitRecent.stream().map(OperationFingerprint::describe).toList());
    }

    @Test
    void aFullBeatWithALongReasonFitsOneDatagram() {
        Reason r = new Reason(Reason.Kind.FAILED, 0, -1, null, 0, "DeadlineExceededException", "é".repeat(5000));
        OperationFingerprint f = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {1, 2, 3, 4, 5}, -1);
        java.util.List<OperationFingerprint> eight = java.util.Collections.nCopies(8, f);
        byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, 0, 1, 1, 0, f, f, eight,
                java.util.List.of(new HeartbeatWire.SplitActivity(77, 5, f, f, eight)), r));
        assertThat(b.length).isLessThan(HeartbeatWire.MAX_DATAGRAM);
        HeartbeatWire.Beat back = wire.decode(b, b.length);
        assertThat(back.reason().text()).hasSizeLessThanOrEqualTo(Reason.MAX_TEXT);
        assertThat(back.recent()).hasSize(8);
        // the reason leaves room for only some of the split group's recent collectives
        assertThat(back.splits()).hasSize(1);
        assertThat(back.splits().get(0).recent()).hasSizeBetween(1, 7);
    }

    @Test
    void severalSplitGroupsComeBackInOrderAndTakeTurnsWithTheirRecentCollectives() {
        OperationFingerprint w = OperationFingerprint.of(40, 40, "all_gather", DType.INT32, new int[] {12}, -1);
        java.util.List<HeartbeatWire.SplitActivity> splits = new java.util.ArrayList<>();
        for (int g = 0; g < 3; g++) {
            java.util.List<OperationFingerprint> recent = new java.util.ArrayList<>();
            for (int i = 1; i <= 8; i++) recent.add(OperationFingerprint.of(i, i, "all_sum", DType.FLOAT32, new int[] {100 * g + i}, -1));
            splits.add(new HeartbeatWire.SplitActivity(1000 + g, g, g == 1 ? null : recent.get(7), recent.get(6), recent));
        }
        for (long sequence = 30; sequence < 33; sequence++) {
            byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, 1, 42L, sequence, 10, w, w,
                    java.util.Collections.nCopies(8, w), splits, null));
            assertThat(b.length).isLessThanOrEqualTo(HeartbeatWire.MAX_DATAGRAM);
            java.util.List<HeartbeatWire.SplitActivity> back = wire.decode(b, b.length).splits();
            assertThat(back).extracting(HeartbeatWire.SplitActivity::group).containsExactly(1000, 1001, 1002);
            assertThat(back.get(1).running()).isNull();
            assertThat(back.get(2).running().describe()).isEqualTo(splits.get(2).running().describe());
            // every group's running and last operations first; the room left goes to one group's newest collectives
            // first, a different group in each beat (the sequence number's turn)
            int turn = (int) (sequence % 3);
            int kept = back.get(turn).recent().size();
            assertThat(kept).as("beat %d", sequence).isBetween(4, 8);
            assertThat(back.get(turn).recent()).extracting(OperationFingerprint::sequence)
                    .containsExactlyInAnyOrderElementsOf(java.util.stream.LongStream.rangeClosed(9 - kept, 8).boxed().toList());
            for (int g = 0; g < 3; g++) assertThat(back.get(g).recent().size()).isLessThanOrEqualTo(kept);
        }
    }

    @Test
    void moreSplitGroupsThanFitAreCutFromTheEndAndTheBeatStaysOneDatagram() {
        Reason r = new Reason(Reason.Kind.FAILED, 0, -1, null, 0, "DeadlineExceededException", "x".repeat(5000));
        OperationFingerprint f = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {7}, -1);
        java.util.List<OperationFingerprint> eight = java.util.Collections.nCopies(8, f);
        java.util.List<HeartbeatWire.SplitActivity> splits = new java.util.ArrayList<>();
        for (int g = 0; g < 20; g++) splits.add(new HeartbeatWire.SplitActivity(g, g, f, f, eight));
        for (Reason reason : java.util.Arrays.asList(null, r)) {
            byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, 0, 1, 1, 0, f, f, eight, splits, reason));
            assertThat(b.length).isLessThanOrEqualTo(HeartbeatWire.MAX_DATAGRAM);
            HeartbeatWire.Beat back = wire.decode(b, b.length);
            assertThat(back.recent()).hasSize(8);
            assertThat(back.reason()).isEqualTo(reason == null ? null : back.reason());
            assertThat(back.splits()).isNotEmpty().hasSizeLessThan(20);
            assertThat(back.splits()).extracting(HeartbeatWire.SplitActivity::group)
                    .containsExactlyElementsOf(java.util.stream.IntStream.range(0, back.splits().size()).boxed().toList());
        }
    }

    @Test
    void datagramsOfAnotherKeyOrAlteredOnTheWayAreIgnored() {
        byte[] b = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.LEAVE, 0, 1, 1, 0, null, null, null, null, null));
        HeartbeatWire other = new HeartbeatWire(HeartbeatWire.key("another token", WatchedGroups.loopbackTable(2)));
        assertThat(other.decode(b, b.length)).isNull();
        assertThat(wire.decode(b, b.length).type()).isEqualTo(HeartbeatWire.LEAVE);
        b[9] ^= 1;
        assertThat(wire.decode(b, b.length)).isNull();
        assertThat(wire.decode(new byte[5], 5)).isNull();
    }

    @Test
    void withoutATokenTheKeyComesFromTheTable() {
        assertThat(HeartbeatWire.key(null, WatchedGroups.loopbackTable(2))).isEqualTo(HeartbeatWire.key("", WatchedGroups.loopbackTable(2)))
                .isNotEqualTo(HeartbeatWire.key(null, WatchedGroups.loopbackTable(3)));
    }
}
