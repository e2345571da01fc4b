package dev.jdist.rendezvous;

import dev.jdist.AllGatherFactory;

import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** An all-gather between threads of one JVM (what Spark's barrier all-gather is to executors), bounded in time. */
final class InMemoryAllGather implements AllGatherFactory {
    private final int size;
    private final CyclicBarrier filled;
    private final CyclicBarrier read;
    private final byte[][] slots;

    InMemoryAllGather(int size) {
        this.size = size;
        this.filled = new CyclicBarrier(size);
        this.read = new CyclicBarrier(size);
        this.slots = new byte[size][];
    }

    @Override
    public AllGather create(int rank, int n) {
        return slot(rank).create(rank, n);
    }

    /** The exchange as seen from place {@code slot}, whatever rank the caller then claims (a launcher's mistake). */
    AllGatherFactory slot(int slot) {
        return (claimed, n) -> (src, bytesPerRank) -> {
            int rank = slot;
            try {
                slots[rank] = src.clone();
                filled.await(30, TimeUnit.SECONDS);
                byte[] out = new byte[size * bytesPerRank];
                for (int q = 0; q < size; q++) System.arraycopy(slots[q], 0, out, q * bytesPerRank, bytesPerRank);
                read.await(30, TimeUnit.SECONDS);
                return out;
            } catch (InterruptedException | BrokenBarrierException | TimeoutException e) {
                throw new IllegalStateException("in-memory all-gather failed: " + e, e);
            }
        };
    }
}
