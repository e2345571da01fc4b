package dev.jdist.algo;

import java.lang.foreign.MemorySegment;

/**
 * What runs one rank's part of a {@link MeshSchedule} that only moves data (no combines): the ring's peer mesh
 * ({@code RingGroup} over {@link dev.jdist.mesh.MeshTransport}, which also breaks the ring on a failure) and JACCL's frame engine
 * ({@code FrameScheduleRunner}) both do, so the operations MLX lacks share their schedules and the code around them
 * ({@code dev.jdist.algo.PeerOperations}) whatever carries the bytes.
 */
@FunctionalInterface
public interface ScheduleRunner {
    /**
     * Runs {@code schedule} with {@code work} as its {@code WORK} buffer and {@code input} (null when the schedule reads
     * none) as its {@code INPUT}; the runner provides a {@code SCRATCH} of {@link MeshSchedule#scratchBytes()}.
     * {@code opName} names the operation in errors ({@code broadcast from rank 2 (binomial tree)}). Every rule of
     * {@link MeshSchedule} holds: steps in order, the messages of a step progressing together, those to one peer in the
     * order listed. A failure is thrown, with the runner's group broken as its other operations would leave it.
     */
    void run(String opName, MeshSchedule schedule, MemorySegment work, MemorySegment input);
}
