package dev.jdist.ring;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Moves the bytes of {@link RingSchedule} streams between a rank and its two ring neighbours: the
 * transport half of the ring (the schedule is the algorithm half). {@link TcpTransport} uses the TCP
 * connections (MLX's wire); {@link ShmTransport} uses shared memory between ranks on one host.
 */
interface RingTransport extends AutoCloseable {

    /** Throws when the group is broken (same kind as the first failure) or closed. */
    void checkUsable(String opName);

    /**
     * Runs {@code streams} over {@code work} (reduction items combine with {@code op} as
     * {@code dtype}); returns when every byte has been sent and received.
     */
    void run(String opName, List<RingSchedule.Stream> streams, MemorySegment work, ReduceOp op, DType dtype);

    /**
     * Like {@link #run}, for a reduction whose work buffer must start as a copy of {@code source}
     * (all_sum/max/min's large path). Same as {@link #runFromSource(String, List, MemorySegment,
     * MemorySegment, long, long, long, ReduceOp, DType)} with one block.
     */
    default void runFromSource(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                               ReduceOp op, DType dtype) {
        runFromSource(opName, streams, work, source, work.byteSize(), 0, 0, op, dtype);
    }

    /**
     * Like {@link #run}, for a reduction whose work buffer must start as a copy of parts of
     * {@code source}: work block c ({@code blockBytes} long, at {@code c * blockBytes}) holds source
     * bytes {@code [sourceOffset + c * sourceStride, ... + blockBytes)} (sum_scatter's pieces: the same
     * element range of every rank's chunk). This default copies first; a transport may instead read
     * {@code source} where the schedule first touches each byte, which saves a pass over memory. Valid
     * for schedules where every stream's first send item and every reduce item touch bytes no earlier
     * item of the stream wrote, and no item crosses a block boundary (true of
     * {@link RingSchedule#allReduce}'s large path and {@link RingSchedule#sumScatter}).
     */
    default void runFromSource(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                               long blockBytes, long sourceStride, long sourceOffset, ReduceOp op, DType dtype) {
        if (!nothingToCopy(work, source, blockBytes, sourceStride, sourceOffset)) {
            for (long c = 0; c * blockBytes < work.byteSize(); c++) {
                MemorySegment.copy(source, sourceOffset + c * sourceStride, work, c * blockBytes, blockBytes);
            }
        }
        run(opName, streams, work, op, dtype);
    }

    /** Whether {@code work} already holds what {@code runFromSource} would copy there (or there is nothing to copy). */
    static boolean nothingToCopy(MemorySegment work, MemorySegment source, long blockBytes, long sourceStride, long sourceOffset) {
        return blockBytes <= 0 || source.address() + sourceOffset == work.address()
                && (sourceStride == blockBytes || blockBytes >= work.byteSize());
    }

    @Override
    void close();
}
