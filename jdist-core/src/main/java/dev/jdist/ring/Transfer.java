package dev.jdist.ring;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * What one run of a {@link RingTransport} moves: the {@link RingSchedule} streams of one operation over a work
 * buffer. {@link RingGroup} builds it from requests that {@link dev.jdist.Group} has already validated; the
 * transport only moves bytes.
 *
 * <p>Reduction items combine with {@code op} as {@code dtype} (both null when the schedule has none). When
 * {@code source} is not null, the work buffer's bytes start out in {@code source} rather than in {@code work}:
 * work block c ({@code blockBytes} long, at {@code c * blockBytes}) starts as source bytes
 * {@code [sourceOffset + c * sourceStride, ... + blockBytes)}. The transports read {@code source} where the
 * schedule first touches each byte instead of copying it first, which saves a pass over memory; that is valid
 * for schedules where every stream's first send item and every reduce item touch bytes no earlier item of the
 * stream wrote, and no item crosses a block boundary (true of {@link RingSchedule#allReduce}'s large path and
 * {@link RingSchedule#sumScatter}).
 *
 * @param opName the operation as messages name it ({@code all_sum}, {@code send to rank 2}, ...)
 */
record Transfer(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                long blockBytes, long sourceStride, long sourceOffset, ReduceOp op, DType dtype) {

    /** Bytes moved as they are, in place in {@code work} (all_gather, send, recv, set-up exchanges). */
    static Transfer of(String opName, List<RingSchedule.Stream> streams, MemorySegment work) {
        return new Transfer(opName, streams, work, null, 1, 0, 0, null, null);
    }

    /** A reduction in place in {@code work} (all_sum/max/min's small path). */
    static Transfer reduce(String opName, List<RingSchedule.Stream> streams, MemorySegment work, ReduceOp op, DType dtype) {
        return new Transfer(opName, streams, work, null, 1, 0, 0, op, dtype);
    }

    /** A reduction whose work buffer starts as a copy of {@code source} (all_sum/max/min's large path). */
    static Transfer reduceFrom(String opName, List<RingSchedule.Stream> streams, MemorySegment work, MemorySegment source,
                               ReduceOp op, DType dtype) {
        return reduceFromBlocks(opName, streams, work, source, work.byteSize(), 0, 0, op, dtype);
    }

    /**
     * A reduction whose work blocks start as parts of {@code source} (sum_scatter's pieces: the same element range
     * of every rank's chunk); in place when {@code work} already holds them.
     */
    static Transfer reduceFromBlocks(String opName, List<RingSchedule.Stream> streams, MemorySegment work,
                                     MemorySegment source, long blockBytes, long sourceStride, long sourceOffset,
                                     ReduceOp op, DType dtype) {
        boolean inPlace = blockBytes <= 0 || source.address() + sourceOffset == work.address()
                && (sourceStride == blockBytes || blockBytes >= work.byteSize());
        if (inPlace) return reduce(opName, streams, work, op, dtype);
        return new Transfer(opName, streams, work, source, blockBytes, sourceStride, sourceOffset, op, dtype);
    }

    /** Bytes per reduced element (1 when nothing is reduced). */
    int itemSize() { return dtype == null ? 1 : dtype.itemSize(); }

    /** Where the bytes at work offset {@code x} start out in {@code source} (items never cross a block). */
    long sourceOffsetOf(long x) { return sourceOffset + (x / blockBytes) * sourceStride + x % blockBytes; }
}
