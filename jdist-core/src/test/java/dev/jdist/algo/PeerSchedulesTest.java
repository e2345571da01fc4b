package dev.jdist.algo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The data-movement schedules ({@link PeerSchedules}) run in the strict in-memory simulator (nothing buffered between
 * ranks, so they cannot deadlock over TCP): every root, n = 2..9, blocks of different sizes including empty ones.
 */
class PeerSchedulesTest {

    private static MemorySegment bytes(long n, int fill) {
        MemorySegment s = Arena.ofAuto().allocate(Math.max(1, n)).asSlice(0, n);
        for (long i = 0; i < n; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (fill * 31 + i));
        return s;
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4, 5, 7, 8, 9})
    void broadcastReachesEveryRankFromEveryRoot(int n) {
        for (int root = 0; root < n; root++) {
            List<MeshSchedule> s = new ArrayList<>();
            MemorySegment[] work = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                s.add(PeerSchedules.broadcast(r, n, root, 13));
                work[r] = bytes(13, r == root ? 99 : r);
            }
            ScheduleSimulator.run(s, work, null, null);
            for (int r = 0; r < n; r++) assertThat(work[r].toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes(13, 99).toArray(ValueLayout.JAVA_BYTE));
            // the root sends ⌈log2 n⌉ times at most
            assertThat(s.get(root).steps().size()).isLessThanOrEqualTo(32 - Integer.numberOfLeadingZeros(n - 1));
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 5, 8})
    void allToAllWithBlocksOfAnySizeDeliversBlockQToRankQ(int n) {
        // rank q sends (q + 2j) % 3 bytes to rank j
        List<MeshSchedule> s = new ArrayList<>();
        MemorySegment[] work = new MemorySegment[n], input = new MemorySegment[n];
        for (int r = 0; r < n; r++) {
            long[] send = new long[n], recv = new long[n];
            for (int q = 0; q < n; q++) {
                send[q] = (r + 2 * q) % 3;
                recv[q] = (q + 2 * r) % 3;
            }
            s.add(PeerSchedules.allToAll(r, n, send, recv));
            long[] so = PeerSchedules.offsets(send);
            input[r] = Arena.ofAuto().allocate(Math.max(1, so[n - 1] + send[n - 1])).asSlice(0, so[n - 1] + send[n - 1]);
            for (int q = 0; q < n; q++) for (long i = 0; i < send[q]; i++) input[r].set(ValueLayout.JAVA_BYTE, so[q] + i, (byte) (r * 10 + q));
            long[] ro = PeerSchedules.offsets(recv);
            work[r] = Arena.ofAuto().allocate(Math.max(1, ro[n - 1] + recv[n - 1]));
        }
        ScheduleSimulator.run(s, work, input, null, null);
        for (int r = 0; r < n; r++) {
            long o = 0;
            for (int q = 0; q < n; q++) {
                long len = (q + 2 * r) % 3;
                for (long i = 0; i < len; i++) {
                    if (q != r) assertThat(work[r].get(ValueLayout.JAVA_BYTE, o + i)).as("rank %d block from %d", r, q).isEqualTo((byte) (q * 10 + r));
                }
                o += len;
            }
        }
    }

    @Test
    void gatherAndScatterMoveEveryBlockToAndFromTheRoot() {
        int n = 5, root = 3;
        List<MeshSchedule> g = new ArrayList<>(), sc = new ArrayList<>();
        MemorySegment[] gw = new MemorySegment[n], sw = new MemorySegment[n];
        for (int r = 0; r < n; r++) {
            g.add(PeerSchedules.gather(r, n, root, 4));
            sc.add(PeerSchedules.scatter(r, n, root, 4));
            gw[r] = r == root ? Arena.ofAuto().allocate(4L * n) : bytes(4, r);
            sw[r] = r == root ? bytes(4L * n, 7) : Arena.ofAuto().allocate(4);
        }
        ScheduleSimulator.run(g, gw, null, null);
        ScheduleSimulator.run(sc, sw, null, null);
        for (int q = 0; q < n; q++) {
            if (q != root) assertThat(gw[root].asSlice(4L * q, 4).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes(4, q).toArray(ValueLayout.JAVA_BYTE));
            if (q != root) assertThat(sw[q].toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes(4L * n, 7).asSlice(4L * q, 4).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aBatchInWhichEveryRankSendsBeforeItReceivesDoesNotDeadlock() {
        // every rank sends to both neighbours first, then receives: blocking calls would hang without buffering
        int n = 4;
        List<MeshSchedule> s = new ArrayList<>();
        MemorySegment[] work = new MemorySegment[n], input = new MemorySegment[n];
        for (int r = 0; r < n; r++) {
            int right = (r + 1) % n, left = (r + n - 1) % n;
            s.add(PeerSchedules.batch(List.of(new PeerSchedules.Transfer(right, true, 8), new PeerSchedules.Transfer(left, true, 8),
                    new PeerSchedules.Transfer(left, false, 8), new PeerSchedules.Transfer(right, false, 8))));
            input[r] = bytes(16, r);
            work[r] = Arena.ofAuto().allocate(16);
        }
        ScheduleSimulator.run(s, work, input, null, null);
        for (int r = 0; r < n; r++) {
            int left = (r + n - 1) % n, right = (r + 1) % n;
            assertThat(work[r].asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes(16, left).asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE));
            assertThat(work[r].asSlice(8, 8).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes(16, right).asSlice(8, 8).toArray(ValueLayout.JAVA_BYTE));
        }
    }
}
