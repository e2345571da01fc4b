package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Averages gradients over a group the way MLX's {@code nn.average_gradients} does (
 * docs/reference/collectives.md §7.1): consecutive small arrays are packed into one buffer so that many small
 * tensors cost a few large {@code all_sum}s.
 *
 * <p>Grouping rule: walk the leaves in order keeping a running byte count; a leaf that makes the
 * count reach or exceed {@code allReduceSizeBytes} closes its group; the leftover leaves form the
 * last group. Each group is concatenated, summed with one {@code all_sum}, divided by the group
 * size {@code N} and cut back into arrays of the leaves' shapes. A threshold {@code <= 0}, or
 * leaves of more than one dtype, gives one {@code all_sum} per leaf. With one rank the input is
 * returned as is. Integer and bool gradients come back as float32 (MLX's type promotion for
 * division); floating and complex gradients keep their dtype.
 *
 * <p>The optional communication dtype casts each packed buffer before the {@code all_sum} and back
 * afterwards (its item size is then what the threshold counts), e.g. float16 to halve the bytes
 * on the wire at the cost of precision.
 *
 * <p>The results of a packed group are views into one buffer; they are fresh memory, never the
 * caller's arrays (except with one rank, where nothing is done).
 */
public final class Gradients {
    /** MLX's default {@code all_reduce_size}: 32 MiB. */
    public static final long DEFAULT_ALL_REDUCE_SIZE = 32L * 1024 * 1024;

    private Gradients() {}

    // ------------------------------------------------------------------ lists

    /** {@code average(gradients, group, 32 MiB, no communication dtype)}. */
    public static List<Array> average(List<Array> gradients, Group group) {
        return average(gradients, group, DEFAULT_ALL_REDUCE_SIZE, null);
    }

    /** {@code average(gradients, group, allReduceSizeBytes, no communication dtype)}. */
    public static List<Array> average(List<Array> gradients, Group group, long allReduceSizeBytes) {
        return average(gradients, group, allReduceSizeBytes, null);
    }

    /**
     * The average over the group of each gradient, in the input's order.
     *
     * @param group             the group; null means {@link Distributed#init()}
     * @param allReduceSizeBytes pack leaves until a group reaches this many bytes; {@code <= 0}: one collective per leaf
     * @param communicationType dtype to send in, or null to send each gradient in its own dtype
     */
    public static List<Array> average(List<Array> gradients, Group group, long allReduceSizeBytes, DType communicationType) {
        return run(gradients, group, allReduceSizeBytes, communicationType, false).join();
    }

    /**
     * As {@link #average(List, Group, long, DType)}, but returns at once: the collectives run on
     * the group's operation thread while the caller computes. Every rank must still issue the
     * same collectives in the same order (same leaf sizes, same threshold).
     */
    public static CompletableFuture<List<Array>> averageAsync(List<Array> gradients, Group group, long allReduceSizeBytes,
                                                              DType communicationType) {
        return run(gradients, group, allReduceSizeBytes, communicationType, true);
    }

    // ------------------------------------------------------------------ maps (named parameters)

    /** {@code average(gradients, group, 32 MiB, no communication dtype)} for named gradients. */
    public static <K> Map<K, Array> average(Map<K, Array> gradients, Group group) {
        return average(gradients, group, DEFAULT_ALL_REDUCE_SIZE, null);
    }

    /** {@code average(gradients, group, allReduceSizeBytes, no communication dtype)} for named gradients. */
    public static <K> Map<K, Array> average(Map<K, Array> gradients, Group group, long allReduceSizeBytes) {
        return average(gradients, group, allReduceSizeBytes, null);
    }

    /**
     * Named gradients: the leaf order is the map's iteration order (use a {@link LinkedHashMap}
     * or a sorted map, and the same one on every rank); the result has the same keys in that order.
     */
    public static <K> Map<K, Array> average(Map<K, Array> gradients, Group group, long allReduceSizeBytes,
                                            DType communicationType) {
        return averageAsync(gradients, group, allReduceSizeBytes, communicationType, false).join();
    }

    /** The asynchronous form of {@link #average(Map, Group, long, DType)}. */
    public static <K> CompletableFuture<Map<K, Array>> averageAsync(Map<K, Array> gradients, Group group,
                                                                   long allReduceSizeBytes, DType communicationType) {
        return averageAsync(gradients, group, allReduceSizeBytes, communicationType, true);
    }

    private static <K> CompletableFuture<Map<K, Array>> averageAsync(Map<K, Array> gradients, Group group,
                                                                    long allReduceSizeBytes, DType communicationType,
                                                                    boolean async) {
        Objects.requireNonNull(gradients, "gradients");
        Group g = group == null ? Distributed.init() : group;
        if (g.size() == 1 || gradients.isEmpty()) return CompletableFuture.completedFuture(gradients);
        List<K> keys = new ArrayList<>(gradients.keySet());
        List<Array> leaves = new ArrayList<>(gradients.values());
        return run(leaves, g, allReduceSizeBytes, communicationType, async).thenApply(averaged -> {
            Map<K, Array> out = new LinkedHashMap<>();
            for (int i = 0; i < keys.size(); i++) out.put(keys.get(i), averaged.get(i));
            return out;
        });
    }

    // ------------------------------------------------------------------ overlap with computation

    /**
     * A bucketing averager for overlapping communication with the backward pass: {@link
     * GradientBuckets#add add} each gradient as soon as it is computed; a full bucket starts its
     * {@code all_sum} at once (asynchronously), and {@link GradientBuckets#finish finish} sends the
     * rest and returns every average in add order.
     */
    public static GradientBuckets overlapped(Group group, long allReduceSizeBytes, DType communicationType) {
        return new GradientBuckets(group == null ? Distributed.init() : group, allReduceSizeBytes, communicationType);
    }

    // ------------------------------------------------------------------ gradient clipping

    /** The clipped gradients and the global norm before clipping. */
    public record Clipped(List<Array> gradients, double norm) {}

    /**
     * MLX's {@code clip_grad_norm_sharded}: {@code norm = sqrt(all_sum(Σ Σ g²))} over every rank's
     * (sharded) float gradients; each gradient is scaled by {@code min(maxNorm / (norm + 1e-6), 1)}.
     * One {@code all_sum} of a scalar, issued by every rank.
     */
    public static Clipped clipNormSharded(List<Array> gradients, double maxNorm, Group group) {
        Group g = group == null ? Distributed.init() : group;
        double local = 0;
        for (Array a : gradients) {
            requireFloating(a);
            for (long i = 0; i < a.size(); i++) {
                double v = a.getDouble(i);
                local += v * v;
            }
        }
        Array total = g.allSum(Array.full(DType.FLOAT32, local));
        double norm = Math.sqrt(total.getDouble(0));
        double scale = Math.min(maxNorm / (norm + 1e-6), 1.0);
        List<Array> out = new ArrayList<>(gradients.size());
        for (Array a : gradients) {
            Array s = Array.zeros(a.dtype(), a.shape());
            for (long i = 0; i < a.size(); i++) s.setDouble(i, a.getDouble(i) * scale);
            out.add(s);
        }
        return new Clipped(List.copyOf(out), norm);
    }

    // ------------------------------------------------------------------ the algorithm

    /** The groups of consecutive leaves, as {@code [from, to)} index pairs, that {@code average} sends together. */
    static List<int[]> plan(List<Array> leaves, long allReduceSizeBytes, DType communicationType) {
        List<int[]> groups = new ArrayList<>();
        if (leaves.isEmpty()) return groups;
        DType common = leaves.getFirst().dtype();
        boolean oneDtype = leaves.stream().allMatch(a -> a.dtype() == common);
        if (allReduceSizeBytes <= 0 || !oneDtype) {
            for (int i = 0; i < leaves.size(); i++) groups.add(new int[] {i, i + 1});
            return groups;
        }
        long itemSize = (communicationType != null ? communicationType : common).itemSize();
        long bytes = 0;
        int start = 0;
        for (int i = 0; i < leaves.size(); i++) {
            bytes += leaves.get(i).size() * itemSize;
            if (bytes >= allReduceSizeBytes) {
                groups.add(new int[] {start, i + 1});
                start = i + 1;
                bytes = 0;
            }
        }
        if (start < leaves.size()) groups.add(new int[] {start, leaves.size()});
        return groups;
    }

    private static CompletableFuture<List<Array>> run(List<Array> gradients, Group group, long allReduceSizeBytes,
                                                      DType communicationType, boolean async) {
        Objects.requireNonNull(gradients, "gradients");
        for (int i = 0; i < gradients.size(); i++) {
            if (gradients.get(i) == null) throw new IllegalArgumentException("gradient " + i + " is null; pass an array for every leaf");
        }
        Group g = group == null ? Distributed.init() : group;
        if (g.size() == 1 || gradients.isEmpty()) return CompletableFuture.completedFuture(gradients);
        Function<Array, CompletableFuture<Array>> allSum =
                async ? g::allSumAsync : x -> CompletableFuture.completedFuture(g.allSum(x));
        List<CompletableFuture<List<Array>>> parts = new ArrayList<>();
        for (int[] range : plan(gradients, allReduceSizeBytes, communicationType)) {
            parts.add(averageGroup(gradients.subList(range[0], range[1]), g.size(), communicationType, allSum));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<Array> out = new ArrayList<>(gradients.size());
            for (CompletableFuture<List<Array>> p : parts) out.addAll(p.join());
            return List.copyOf(out);
        });
    }

    /** Packs {@code leaves} (one dtype) into one buffer, starts its all_sum, and unpacks the average when it completes. */
    static CompletableFuture<List<Array>> averageGroup(List<Array> leaves, int n, DType communicationType,
                                                       Function<Array, CompletableFuture<Array>> allSum) {
        List<Array> own = List.copyOf(leaves);
        DType dtype = own.getFirst().dtype();
        Array packed = pack(own, dtype);
        if (communicationType != null && communicationType != dtype) packed = convert(packed, communicationType);
        return allSum.apply(packed).thenApply(sum -> {
            Array back = sum.dtype() == dtype ? sum : convert(sum, dtype);
            return split(divide(back, n), own);
        });
    }

    private static Array pack(List<Array> leaves, DType dtype) {
        if (leaves.size() == 1) {
            Array a = leaves.getFirst();
            return a.reshape(Math.toIntExact(a.size()));
        }
        long elements = 0;
        for (Array a : leaves) elements += a.size();
        Array flat = Array.zeros(dtype, Math.toIntExact(elements));
        long offset = 0;
        for (Array a : leaves) {
            MemorySegment.copy(a.segment(), 0, flat.segment(), offset, a.nbytes());
            offset += a.nbytes();
        }
        return flat;
    }

    private static List<Array> split(Array flat, List<Array> leaves) {
        List<Array> out = new ArrayList<>(leaves.size());
        long itemSize = flat.dtype().itemSize();
        long offset = 0;
        for (Array a : leaves) {
            long bytes = a.size() * itemSize;
            out.add(Array.wrap(flat.segment().asSlice(offset, bytes), flat.dtype(), a.shape()));
            offset += bytes;
        }
        return out;
    }

    /** The dtype of {@code x / N}: floating and complex dtypes stay, integers and bool become float32 (MLX promotion). */
    static DType quotientType(DType dtype) {
        return dtype.isFloatingPoint() || dtype == DType.COMPLEX64 ? dtype : DType.FLOAT32;
    }

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * {@code x / n} in a new array of {@link #quotientType}: integers and bool are first converted to
     * float32 (as MLX does); float16 and bfloat16 divide in float32 and round once.
     */
    static Array divide(Array x, int n) {
        if (quotientType(x.dtype()) != x.dtype()) x = x.astype(DType.FLOAT32);
        Array out = Array.zeros(x.dtype(), x.shape());
        MemorySegment src = x.segment();
        MemorySegment dst = out.segment();
        switch (x.dtype()) {
            case FLOAT32, COMPLEX64 -> {
                float d = n;
                for (long i = 0, e = x.nbytes() / 4; i < e; i++) dst.set(F32, i * 4, src.get(F32, i * 4) / d);
            }
            case FLOAT64 -> {
                double d = n;
                for (long i = 0, e = x.size(); i < e; i++) dst.set(F64, i * 8, src.get(F64, i * 8) / d);
            }
            default -> {
                // float16, bfloat16: the float32 quotient is rounded to the dtype once (round to nearest even)
                float d = n;
                for (long i = 0, e = x.size(); i < e; i++) out.setDouble(i, (float) x.getDouble(i) / d);
            }
        }
        return out;
    }

    /** Element-wise conversion ({@link Array#astype}); {@code x} itself when it already has that dtype. */
    static Array convert(Array x, DType to) {
        return x.dtype() == to ? x : x.astype(to);
    }

    private static void requireFloating(Array a) {
        if (!a.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("clipping needs floating-point gradients but got " + a.dtype() + " with shape "
                    + Arrays.toString(a.shape()));
        }
    }
}
