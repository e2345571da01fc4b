package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Group;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Averages gradients while they are still being computed (see {@link Gradients#overlapped}).
 * Add each gradient as the backward pass produces it; whenever the open bucket reaches the
 * threshold its {@code all_sum} starts on the group's operation thread, so communication of the
 * last layers overlaps with computing the gradients of the earlier ones.
 *
 * <p>Buckets follow {@link Gradients}' rule (consecutive leaves, a leaf that reaches the threshold
 * closes its bucket; threshold {@code <= 0}: one {@code all_sum} per leaf), with one difference
 * forced by not knowing the future: a leaf whose dtype differs from the open bucket's closes that
 * bucket first, instead of switching every leaf to one collective each. For leaves of one dtype
 * the collectives are exactly those of {@link Gradients#average(List, Group, long, DType)}.
 *
 * <p>Every rank must add gradients of the same sizes and dtypes in the same order. Not thread-safe:
 * call it from one thread.
 */
public final class GradientBuckets {
    private final Group group;
    private final long threshold;
    private final DType communicationType;
    private final List<Array> added = new ArrayList<>();
    private final List<CompletableFuture<List<Array>>> sent = new ArrayList<>();
    private final List<Array> open = new ArrayList<>();
    private long openBytes;
    private boolean finished;

    GradientBuckets(Group group, long allReduceSizeBytes, DType communicationType) {
        this.group = group;
        this.threshold = allReduceSizeBytes;
        this.communicationType = communicationType;
    }

    /** Adds the next gradient; returns its index in {@link #finish()}'s list. May start an {@code all_sum}. */
    public int add(Array gradient) {
        if (finished) throw new IllegalStateException("finish() was already called; start a new Gradients.overlapped(...) for the next step");
        if (gradient == null) throw new IllegalArgumentException("gradient " + added.size() + " is null; pass an array");
        added.add(gradient);
        if (group.size() == 1) return added.size() - 1;
        if (!open.isEmpty() && open.getFirst().dtype() != gradient.dtype()) flush();
        open.add(gradient);
        DType wire = communicationType != null ? communicationType : gradient.dtype();
        openBytes += gradient.size() * wire.itemSize();
        if (threshold <= 0 || openBytes >= threshold) flush();
        return added.size() - 1;
    }

    /** Sends what is left and returns every averaged gradient, in add order, once all collectives are done. */
    public CompletableFuture<List<Array>> finish() {
        if (finished) throw new IllegalStateException("finish() was already called");
        finished = true;
        if (group.size() == 1) return CompletableFuture.completedFuture(List.copyOf(added));
        flush();
        return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<Array> out = new ArrayList<>(added.size());
            for (CompletableFuture<List<Array>> f : sent) out.addAll(f.join());
            return List.copyOf(out);
        });
    }

    private void flush() {
        if (open.isEmpty()) return;
        sent.add(Gradients.averageGroup(open, group.size(), communicationType, group::allSumAsync));
        open.clear();
        openBytes = 0;
    }
}
