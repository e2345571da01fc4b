package dev.jdist.algo;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static dev.jdist.algo.MeshSchedule.Buffer.WORK;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The simulator catches what it is there to catch: mismatched lengths, overlaps, deadlocks. */
class ScheduleSimulatorTest {

    private static MemorySegment[] work(int n) {
        MemorySegment[] w = new MemorySegment[n];
        for (int r = 0; r < n; r++) w[r] = Arena.ofAuto().allocate(64);
        return w;
    }

    @Test
    void mismatchedLengths() {
        MeshSchedule a = new MeshSchedule.Builder().send(1, WORK, 0, 4).build();
        MeshSchedule b = new MeshSchedule.Builder().recv(0, WORK, 0, 8).build();
        assertThatThrownBy(() -> ScheduleSimulator.run(List.of(a, b), work(2), ReduceOp.SUM, DType.UINT8))
                .hasMessageContaining("sends 4 bytes to rank 1").hasMessageContaining("receives 8");
    }

    @Test
    void receivingFirstOnBothSidesIsADeadlock() {
        MeshSchedule a = new MeshSchedule.Builder().recv(1, WORK, 0, 4).endStep().send(1, WORK, 8, 4).build();
        MeshSchedule b = new MeshSchedule.Builder().recv(0, WORK, 0, 4).endStep().send(0, WORK, 8, 4).build();
        assertThatThrownBy(() -> ScheduleSimulator.run(List.of(a, b), work(2), ReduceOp.SUM, DType.UINT8))
                .hasMessageContaining("deadlock");
    }

    @Test
    void aReceiveOverlappingASendOfTheSameStep() {
        MeshSchedule a = new MeshSchedule.Builder().send(1, WORK, 0, 8).recv(1, WORK, 4, 8).build();
        MeshSchedule b = new MeshSchedule.Builder().send(0, WORK, 0, 8).recv(0, WORK, 8, 8).build();
        assertThatThrownBy(() -> ScheduleSimulator.run(List.of(a, b), work(2), ReduceOp.SUM, DType.UINT8))
                .hasMessageContaining("overlaps a sent range");
    }
}
