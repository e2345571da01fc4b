package dev.jdist.djl;

import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import dev.jdist.Group;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * This rank's batches of a DJL {@link RandomAccessDataset}: the shard a {@link DistributedSampler} gives, cut into
 * batches of {@code batchSize} (docs/djl.md). Use it as the dataset's sampling:
 * {@code builder.setSampling(new DistributedBatchSampler(group, batchSize, seed))}.
 *
 * <p>Not DJL's {@code BatchSampler} around a {@code DistributedSampler}: that one counts an epoch's batches from the
 * whole dataset's size, so on n ranks each epoch would end with batches of nothing (and a rank would take more steps
 * than its shard holds).
 */
public final class DistributedBatchSampler implements Sampler {
    private final DistributedSampler shard;
    private final int batchSize;
    private final boolean dropLast;

    /** Shuffled every epoch from {@code seed}, the last short batch kept. */
    public DistributedBatchSampler(Group group, int batchSize, long seed) {
        this(new DistributedSampler(group, seed), batchSize, false);
    }

    /** @param dropLast leave out an epoch's last batch when it is short (the same on every rank: shards are equal) */
    public DistributedBatchSampler(DistributedSampler shard, int batchSize, boolean dropLast) {
        if (batchSize < 1) throw new IllegalArgumentException("batchSize must be at least 1, got " + batchSize);
        this.shard = shard;
        this.batchSize = batchSize;
        this.dropLast = dropLast;
    }

    /** The shard sampler (its epoch, for {@link DistributedSampler#setEpoch}). */
    public DistributedSampler shard() { return shard; }

    @Override
    public Iterator<List<Long>> sample(RandomAccessDataset dataset) {
        return batches(shard.indices(dataset.size())).iterator();
    }

    List<List<Long>> batches(List<Long> indices) {
        List<List<Long>> out = new ArrayList<>();
        for (int from = 0; from < indices.size(); from += batchSize) {
            int to = Math.min(indices.size(), from + batchSize);
            if (dropLast && to - from < batchSize) break;
            out.add(List.copyOf(indices.subList(from, to)));
        }
        return out;
    }

    @Override
    public int getBatchSize() { return batchSize; }
}
