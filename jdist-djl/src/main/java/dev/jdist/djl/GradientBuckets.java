package dev.jdist.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Group;
import dev.jdist.ReduceOp;
import dev.jdist.UnsupportedCollectiveException;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Averages (or broadcasts) a list of DJL arrays over a jdist {@link Group} in a few large collectives
 * (docs/djl.md, "How gradients travel"). The arrays are cut into buckets of about {@code bucketBytes} (in list order,
 * as MLX's {@code average_gradients} groups them); each bucket is a float32 tensor of the engine, kept from call to
 * call, into whose slices the arrays are copied (the one copy out, inside the engine); jdist reads and writes its memory
 * in place through the engine's direct buffer (no copy), and each slice is copied back into its array in place (the
 * one copy back). While bucket k travels, bucket k+1 is packed.
 * With a communication type, jdist narrows the float32 bucket to it before the all-reduce and widens the sums
 * back into the bucket (two conversions on jdist's side; still one copy between the engine and jdist each way).
 *
 * <p>Every rank must pass arrays of the same sizes in the same order. Not thread-safe: one call at a time.
 */
public final class GradientBuckets implements AutoCloseable {
    /** MLX's default threshold for {@code average_gradients} (32 MiB). */
    public static final long DEFAULT_BUCKET_BYTES = 32L << 20;

    private final Group group;
    private final long bucketBytes;
    private final DType wireDType;
    private final ExecutorService wire;
    private int collectives;
    private final List<Bucket> kept = new ArrayList<>();
    private NDManager memory;

    /**
     * @param bucketBytes a bucket closes when its float32 bytes reach this ({@code <= 0}: one collective per array)
     * @param communicationType {@code null} to send float32 as it is (exact); {@link DType#BFLOAT16} or
     *        {@link DType#FLOAT16} to halve the bytes on the wire, at the cost of precision
     */
    public GradientBuckets(Group group, long bucketBytes, DType communicationType) {
        if (group == null) throw new IllegalArgumentException("GradientBuckets needs a group, got null");
        this.group = group;
        this.bucketBytes = bucketBytes;
        this.wireDType = wireType(communicationType);
        this.wire = group.size() == 1 ? null : Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "jdist-djl-buckets");
            t.setDaemon(true);
            return t;
        });
    }

    private static DType wireType(DType t) {
        if (t == null || t == DType.FLOAT32) return null;
        if (t == DType.BFLOAT16 || t == DType.FLOAT16) return t;
        throw new IllegalArgumentException("communicationType must be null (float32 as is), bfloat16 or float16, got " + t);
    }

    /** How many collectives this object has issued so far (for tests: bucketing means few). */
    public int collectives() { return collectives; }

    /** Replaces every array by its average over the group (sum, then divide by the group size). */
    public void average(List<NDArray> arrays) {
        if (group.size() == 1) return;
        run(arrays, true);
    }

    /** Replaces every array by rank 0's. */
    public void broadcastFromRank0(List<NDArray> arrays) {
        if (group.size() == 1) return;
        run(arrays, false);
    }

    private void run(List<NDArray> arrays, boolean average) {
        for (NDArray a : arrays) {
            if (a.getDataType() != DataType.FLOAT32) {
                throw new IllegalArgumentException("jdist-djl averages float32 arrays; got " + a.getDataType() + " of shape " + a.getShape());
            }
        }
        List<List<NDArray>> buckets = split(arrays);
        List<CompletableFuture<Void>> inFlight = new ArrayList<>();
        try {
            for (int b = 0; b < buckets.size(); b++) {
                Bucket bucket = bucket(b, buckets.get(b));
                bucket.pack(buckets.get(b));
                collectives++;
                inFlight.add(CompletableFuture.runAsync(() -> {
                    if (average) sum(bucket.view);
                    else broadcast(bucket.view);
                }, wire));
            }
            for (int b = 0; b < buckets.size(); b++) {
                join(inFlight.get(b));
                Bucket bucket = kept.get(b);
                if (average) bucket.packed.divi(group.size());
                bucket.unpack(buckets.get(b), !average);
            }
        } finally {
            // a failed step leaves no collective of this object running when the next one starts
            for (CompletableFuture<Void> f : inFlight) f.exceptionally(e -> null).join();
        }
    }

    /**
     * Bucket {@code b}'s engine memory, kept from call to call (a fresh concatenation each step took 0.25-1.1 s
     * against 10 ms for copying into a kept 42 MB tensor, on the loaded 2-core machine), and the jdist view
     * of it. Made again when the bucket's size changes.
     */
    private Bucket bucket(int b, List<NDArray> arrays) {
        long elements = 0;
        for (NDArray a : arrays) elements += a.size();
        while (kept.size() <= b) kept.add(null);
        Bucket k = kept.get(b);
        if (k == null || k.packed.size() != elements) {
            if (k != null) k.packed.close();
            if (memory == null) memory = arrays.get(0).getManager().newSubManager();
            NDArray packed = memory.zeros(new Shape(elements), DataType.FLOAT32);
            k = new Bucket(packed, view(packed));
            kept.set(b, k);
        }
        return k;
    }

    private record Bucket(NDArray packed, Array view) {
        /** The one copy out: each array into its slice of the bucket, inside the engine. */
        void pack(List<NDArray> arrays) {
            long offset = 0;
            for (NDArray a : arrays) {
                long n = a.size();
                try (NDArray flat = a.flatten()) {
                    packed.set(new NDIndex("{}:{}", offset, offset + n), flat);
                }
                offset += n;
            }
        }

        /** The one copy back: each slice into its array, in place. */
        void unpack(List<NDArray> arrays, boolean parameters) {
            long offset = 0;
            for (NDArray a : arrays) {
                long n = a.size();
                // a parameter that requires a gradient takes no in-place write while autograd records (torch's rule
                // for leaves); it is let go for the copy and attached again
                boolean leaf = parameters && a.hasGradient();
                if (leaf) a.setRequiresGradient(false);
                // flatten() of a contiguous array is a view of its memory: the slice lands in a itself
                try (NDArray slice = packed.get(new NDIndex("{}:{}", offset, offset + n)); NDArray flat = a.flatten()) {
                    flat.set(new NDIndex(":"), slice);
                }
                if (leaf) a.setRequiresGradient(true);
                offset += n;
            }
        }
    }

    private static void join(CompletableFuture<Void> f) {
        try {
            f.join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            if (e.getCause() instanceof Error err) throw err;
            throw e;
        }
    }

    /** Sums {@code view} over the group in place, in the communication type when one is set. */
    private void sum(Array view) {
        if (wireDType == null) {
            group.allReduceInto(view, view, ReduceOp.SUM);
            return;
        }
        Array narrow = view.astype(wireDType);
        group.allReduceInto(narrow, narrow, ReduceOp.SUM);
        Array wide = narrow.astype(DType.FLOAT32);
        MemorySegment.copy(wide.segment(), 0, view.segment(), 0, view.nbytes());
    }

    /**
     * Rank 0's bytes to every rank. A group formed from MLX's variables alone has no broadcast (MLX peers may be
     * among its members): there every other rank contributes zeros to an all-sum, which gives rank 0's values
     * (a negative zero becomes a positive one, the same on every rank).
     */
    private void broadcast(Array view) {
        try {
            group.broadcastInto(view, 0);
        } catch (UnsupportedCollectiveException e) {
            if (group.rank() != 0) view.segment().fill((byte) 0);
            group.allReduceInto(view, view, ReduceOp.SUM);
        }
    }

    List<List<NDArray>> split(List<NDArray> arrays) {
        List<List<NDArray>> out = new ArrayList<>();
        List<NDArray> open = new ArrayList<>();
        long bytes = 0;
        for (NDArray a : arrays) {
            open.add(a);
            bytes += a.size() * 4;
            if (bytes >= bucketBytes) {
                out.add(open);
                open = new ArrayList<>();
                bytes = 0;
            }
        }
        if (!open.isEmpty()) out.add(open);
        return out;
    }

    /** The engine's memory of {@code packed}, as a jdist array, without a copy. */
    private static Array view(NDArray packed) {
        ByteBuffer direct = packed.toByteBuffer(true);
        if (!direct.isDirect()) {
            throw new IllegalStateException("the DJL engine gave a heap buffer for a " + packed.getDataType()
                    + " array; jdist-djl needs an engine that exposes CPU tensors as direct buffers (PyTorch does)");
        }
        return Array.wrap(MemorySegment.ofBuffer(direct), DType.FLOAT32, Math.toIntExact(packed.size()));
    }

    @Override
    public void close() {
        if (wire != null) wire.shutdownNow();
        if (memory != null) memory.close();
    }
}
