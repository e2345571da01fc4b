package dev.jdist.djl;

import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import dev.jdist.Group;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Random;

/**
 * Gives each rank its own shard of any DJL {@link RandomAccessDataset} (docs/djl.md), as PyTorch's
 * {@code DistributedSampler}: every epoch all ranks shuffle the indices {@code 0..N-1} the same way
 * ({@link Collections#shuffle(List, Random)} with {@code new Random(seed + epoch)}), pad the list by repeating its
 * head to a multiple of the group size, and rank r keeps positions {@code r, r+n, r+2n, …}. Every rank so gets
 * {@code ceil(N/n)} samples and takes the same number of steps. Batch it with {@link DistributedBatchSampler}, not DJL's
 * {@code BatchSampler} (which counts batches from the whole dataset's size).
 *
 * <p>The epoch advances by one at every {@link #sample} call (DJL asks once per epoch) unless set with {@link #setEpoch}.
 */
public final class DistributedSampler implements Sampler.SubSampler {
    private final int rank;
    private final int size;
    private final long seed;
    private final boolean shuffle;
    private int epoch;

    /** Shuffled every epoch from {@code seed}; rank and size from {@code group}. */
    public DistributedSampler(Group group, long seed) {
        this(group.rank(), group.size(), seed, true);
    }

    /** @param shuffle {@code false}: the indices in order, rank r taking {@code r, r+n, …} */
    public DistributedSampler(int rank, int size, long seed, boolean shuffle) {
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank must be in 0.." + (size - 1) + " and size at least 1, got rank " + rank + " of " + size);
        }
        this.rank = rank;
        this.size = size;
        this.seed = seed;
        this.shuffle = shuffle;
    }

    /** The epoch the next {@link #sample} call shuffles for. */
    public synchronized void setEpoch(int epoch) { this.epoch = epoch; }

    /** The epoch the next {@link #sample} call shuffles for. */
    public synchronized int epoch() { return epoch; }

    @Override
    public Iterator<Long> sample(RandomAccessDataset dataset) {
        return indices(dataset.size()).iterator();
    }

    /** This rank's indices for the next epoch of a dataset of {@code n} records (advances the epoch). */
    public synchronized List<Long> indices(long n) {
        if (n < 1) throw new IllegalArgumentException("the dataset is empty");
        List<Long> all = new ArrayList<>(Math.toIntExact(n));
        for (long i = 0; i < n; i++) all.add(i);
        if (shuffle) Collections.shuffle(all, new Random(seed + epoch));
        epoch++;
        long perRank = (n + size - 1) / size;
        List<Long> mine = new ArrayList<>(Math.toIntExact(perRank));
        for (long k = 0; k < perRank; k++) mine.add(all.get(Math.toIntExact((k * size + rank) % n)));
        return mine;
    }
}
