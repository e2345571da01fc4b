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
 * The neighbour-only schedules ({@link NeighbourSchedules}, the JACCL ring) in the strict in-memory simulator (nothing
 * buffered between ranks): every root, n = 2..9, sizes 1, odd, and several broadcast pieces, all_to_all with blocks of
 * any size including empty ones; and every message names one of the rank's two ring neighbours.
 */
class NeighbourSchedulesTest {

    private static MemorySegment bytes(long n, int fill) {
        MemorySegment s = Arena.ofAuto().allocate(Math.max(1, n)).asSlice(0, n);
        for (long i = 0; i < n; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (fill * 31 + i * 7 + i / 251));
        return s;
    }

    private static byte[] array(MemorySegment s) { return s.toArray(ValueLayout.JAVA_BYTE); }

    /** Every message of rank r's schedule goes to or comes from r − 1 or r + 1. */
    private static void assertNeighboursOnly(List<MeshSchedule> schedules) {
        int n = schedules.size();
        for (int r = 0; r < n; r++) {
            for (MeshSchedule.Step st : schedules.get(r).steps()) {
                for (MeshSchedule.Message m : st.messages()) {
                    assertThat(NeighbourSchedules.isNeighbour(r, n, m.peer())).as("rank %d of %d names rank %d", r, n, m.peer()).isTrue();
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8, 9})
    void broadcastReachesEveryRankFromEveryRoot(int n) {
        for (long size : new long[] {1, 13, 2 * NeighbourSchedules.BROADCAST_PIECE_BYTES + 5}) {
            if (size > 1000 && n > 5) continue;   // the pieces are checked on small rings; the chains on all
            for (int root = 0; root < n; root++) {
                List<MeshSchedule> s = new ArrayList<>();
                MemorySegment[] work = new MemorySegment[n];
                for (int r = 0; r < n; r++) {
                    s.add(NeighbourSchedules.broadcast(r, n, root, size));
                    work[r] = bytes(size, r == root ? 99 : r);
                }
                assertNeighboursOnly(s);
                ScheduleSimulator.run(s, work, null, null);
                for (int r = 0; r < n; r++) assertThat(array(work[r])).as("n=%d root %d rank %d", n, root, r).isEqualTo(array(bytes(size, 99)));
                // both chains: the farthest rank is ⌈(n−1)/2⌉ hops away, so the root's steps are the pieces
                long pieces = (size + NeighbourSchedules.BROADCAST_PIECE_BYTES - 1) / NeighbourSchedules.BROADCAST_PIECE_BYTES;
                assertThat(s.get(root).steps()).hasSize((int) pieces);
            }
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8, 9})
    void gatherAndScatterMoveEveryBlockToAndFromEveryRoot(int n) {
        for (long bytes : new long[] {1, 5, 4096}) {
            for (int root = 0; root < n; root++) {
                List<MeshSchedule> g = new ArrayList<>(), sc = new ArrayList<>();
                MemorySegment[] gw = new MemorySegment[n], sw = new MemorySegment[n];
                for (int r = 0; r < n; r++) {
                    g.add(NeighbourSchedules.gather(r, n, root, bytes));
                    sc.add(NeighbourSchedules.scatter(r, n, root, bytes));
                    gw[r] = r == root ? Arena.ofAuto().allocate(bytes * n) : bytes(bytes, r);
                    sw[r] = r == root ? bytes(bytes * n, 7) : Arena.ofAuto().allocate(bytes);
                }
                assertNeighboursOnly(g);
                assertNeighboursOnly(sc);
                ScheduleSimulator.run(g, gw, null, null);
                ScheduleSimulator.run(sc, sw, null, null);
                for (int q = 0; q < n; q++) {
                    if (q == root) continue;
                    assertThat(array(gw[root].asSlice(bytes * q, bytes))).as("gather n=%d root %d block %d", n, root, q).isEqualTo(array(bytes(bytes, q)));
                    assertThat(array(sw[q])).as("scatter n=%d root %d rank %d", n, root, q).isEqualTo(array(bytes(bytes * n, 7).asSlice(bytes * q, bytes)));
                }
                // the root sends or receives at most two blocks a step: ⌈(n−1)/2⌉ steps
                assertThat(g.get(root).steps()).hasSize(n / 2);
                assertThat(sc.get(root).steps()).hasSize(n / 2);
            }
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8, 9})
    void allToAllWithBlocksOfAnySizeDeliversBlockQToRankQ(int n) {
        for (int pattern = 0; pattern < 3; pattern++) {
            long[][] m = new long[n][n];
            for (int s = 0; s < n; s++) {
                for (int d = 0; d < n; d++) {
                    m[s][d] = switch (pattern) {
                        case 0 -> 6;                         // equal blocks
                        case 1 -> (s + 2 * d) % 3;           // some empty, different in each direction
                        default -> (s * 7 + d * 3) % 5 * 9;  // larger, uneven
                    };
                }
            }
            List<MeshSchedule> s = new ArrayList<>();
            MemorySegment[] work = new MemorySegment[n], input = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                s.add(NeighbourSchedules.allToAll(r, n, m));
                long[] so = PeerSchedules.offsets(m[r]);
                long total = so[n - 1] + m[r][n - 1];
                input[r] = Arena.ofAuto().allocate(Math.max(1, total)).asSlice(0, total);
                for (int d = 0; d < n; d++) for (long i = 0; i < m[r][d]; i++) input[r].set(ValueLayout.JAVA_BYTE, so[d] + i, (byte) (r * 10 + d + i));
                long recv = 0;
                for (int q = 0; q < n; q++) recv += m[q][r];
                work[r] = Arena.ofAuto().allocate(Math.max(1, recv));
            }
            assertNeighboursOnly(s);
            ScheduleSimulator.run(s, work, input, null, null);
            for (int r = 0; r < n; r++) {
                long o = 0;
                for (int q = 0; q < n; q++) {
                    for (long i = 0; i < m[q][r]; i++) {
                        if (q != r) {
                            assertThat(work[r].get(ValueLayout.JAVA_BYTE, o + i)).as("n=%d pattern %d rank %d block from %d byte %d", n, pattern, r, q, i)
                                    .isEqualTo((byte) (q * 10 + r + i));
                        }
                    }
                    o += m[q][r];
                }
                // store and forward: ⌊n/2⌋ steps at most
                assertThat(s.get(r).steps().size()).isLessThanOrEqualTo(n / 2);
            }
        }
    }

    @Test
    void emptyOperationsMoveNothing() {
        assertThat(NeighbourSchedules.broadcast(1, 4, 0, 0)).isSameAs(MeshSchedule.EMPTY);
        assertThat(NeighbourSchedules.gather(1, 4, 0, 0)).isSameAs(MeshSchedule.EMPTY);
        assertThat(NeighbourSchedules.scatter(1, 4, 0, 0)).isSameAs(MeshSchedule.EMPTY);
        assertThat(NeighbourSchedules.allToAll(1, 4, new long[4][4])).isSameAs(MeshSchedule.EMPTY);
    }

    @Test
    void neighboursOfARing() {
        assertThat(NeighbourSchedules.isNeighbour(0, 5, 4)).isTrue();
        assertThat(NeighbourSchedules.isNeighbour(0, 5, 1)).isTrue();
        assertThat(NeighbourSchedules.isNeighbour(0, 5, 2)).isFalse();
        assertThat(NeighbourSchedules.isNeighbour(1, 2, 0)).isTrue();
    }
}
