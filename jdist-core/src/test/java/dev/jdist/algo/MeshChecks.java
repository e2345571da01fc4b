package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Reducer;
import dev.jdist.ring.RingGroup;
import dev.jdist.ring.RingSchedule;
import dev.jdist.spi.GroupImpl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

/**
 * What the mesh algorithms' tests share: inputs that expose the association order, the value docs/reference/collectives.md
 * §10.4 defines, and a check of every op and dtype on a group (in-process and in separate JVMs alike).
 */
public final class MeshChecks {
    private MeshChecks() {}

    /** Element counts worth trying for a group of n. */
    public static long[] sizes(int n) {
        int m = Integer.highestOneBit(n);
        TreeSet<Long> s = new TreeSet<>(List.of(0L, 1L, 2L, 3L, 7L, (long) n - 1, (long) n, (long) n + 1, (long) m - 1,
                (long) m + 1, 2L * m + 1, 1001L));
        s.removeIf(x -> x < 0);
        return s.stream().mapToLong(Long::longValue).toArray();
    }

    // ------------------------------------------------------------------ reference values

    /** §10.4: the pairs (2i, 2i+1), i < n - m, are combined first, then the balanced tree over the m leaves. */
    public static MemorySegment reference(ReduceOp op, DType t, MemorySegment[] x, long elements) {
        int n = x.length;
        int m = Integer.highestOneBit(n);
        int e = n - m;
        MemorySegment[] leaves = new MemorySegment[m];
        for (int v = 0; v < m; v++) {
            int first = v < e ? 2 * v : v + e;
            leaves[v] = copy(x[first]);
            if (v < e) Reducer.reduce(op, t, leaves[v], 0, x[first + 1], 0, elements);
        }
        return tree(op, t, leaves, 0, m, elements);
    }

    /**
     * §10.11's value of a hierarchical all-reduce: each host's members combined left to right in rank order, then §10.4's
     * tree over the hosts' values in host order.
     */
    public static MemorySegment hierarchicalReference(ReduceOp op, DType t, MemorySegment[] x, long elements, HostLayout h) {
        return reference(op, t, hostValues(op, t, x, elements, h), elements);
    }

    /** §10.11's value of a hierarchical sum_scatter (of the whole input): the host values combined left to right in host order. */
    public static MemorySegment hierarchicalScatterReference(DType t, MemorySegment[] x, long elements, HostLayout h) {
        MemorySegment[] hosts = hostValues(ReduceOp.SUM, t, x, elements, h);
        MemorySegment acc = copy(hosts[0]);
        for (int g = 1; g < hosts.length; g++) Reducer.reduce(ReduceOp.SUM, t, acc, 0, hosts[g], 0, elements);
        return acc;
    }

    private static MemorySegment[] hostValues(ReduceOp op, DType t, MemorySegment[] x, long elements, HostLayout h) {
        MemorySegment[] hosts = new MemorySegment[h.hosts()];
        for (int g = 0; g < h.hosts(); g++) {
            int[] m = h.members(g);
            hosts[g] = copy(x[m[0]]);
            for (int i = 1; i < m.length; i++) Reducer.reduce(op, t, hosts[g], 0, x[m[i]], 0, elements);
        }
        return hosts;
    }

    private static MemorySegment tree(ReduceOp op, DType t, MemorySegment[] leaves, int lo, int hi, long elements) {
        if (hi - lo == 1) return leaves[lo];
        int mid = (lo + hi) >>> 1;
        MemorySegment left = tree(op, t, leaves, lo, mid, elements);
        MemorySegment right = tree(op, t, leaves, mid, hi, elements);
        MemorySegment out = copy(left);
        Reducer.reduce(op, t, out, 0, right, 0, elements);
        return out;
    }

    static MemorySegment copy(MemorySegment s) {
        MemorySegment c = Arena.ofAuto().allocate(Math.max(1, s.byteSize()), 16).asSlice(0, s.byteSize());
        MemorySegment.copy(s, 0, c, 0, s.byteSize());
        return c;
    }

    static MemorySegment[] copies(MemorySegment[] inputs) {
        return Arrays.stream(inputs).map(MeshChecks::copy).toArray(MemorySegment[]::new);
    }

    /**
     * Inputs whose reductions depend on the association order and on which side is left: floats of many magnitudes
     * with signed zeros and the odd NaN, integers that wrap, booleans of every byte value.
     */
    public static MemorySegment[] inputs(Random rnd, DType t, int n, long elements) {
        MemorySegment[] out = new MemorySegment[n];
        for (int q = 0; q < n; q++) {
            Array a = Array.zeros(t, Math.toIntExact(elements));
            for (long i = 0; i < elements; i++) {
                switch (t) {
                    case FLOAT32, FLOAT64, FLOAT16, BFLOAT16 -> a.setDouble(i, floatValue(rnd, t));
                    case COMPLEX64 -> a.setComplex(i, (float) floatValue(rnd, DType.FLOAT32), (float) floatValue(rnd, DType.FLOAT32));
                    default -> {
                        for (int b = 0; b < t.itemSize(); b++) {
                            a.segment().set(ValueLayout.JAVA_BYTE, i * t.itemSize() + b, (byte) rnd.nextInt());
                        }
                    }
                }
            }
            out[q] = a.segment();
        }
        return out;
    }

    private static double floatValue(Random rnd, DType t) {
        int k = rnd.nextInt(20);
        if (k == 0) return 0.0;
        if (k == 1) return -0.0;
        if (k == 2 && rnd.nextInt(4) == 0) return Double.NaN;
        int spread = t == DType.FLOAT16 ? 4 : 9;
        return rnd.nextGaussian() * Math.pow(10, rnd.nextInt(2 * spread + 1) - spread);
    }

    /** Every op and dtype at sizes 0, 1, odd and around the segment counts; returns what was wrong ("" when right). */
    public static String checkAll(GroupImpl g, long seed, boolean allDtypes) {
        int n = g.size();
        int r = g.rank();
        StringBuilder bad = new StringBuilder();
        Random rnd = new Random(seed);   // the same on every rank: each rank makes every rank's inputs
        DType[] types = allDtypes ? DType.values() : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.INT8, DType.COMPLEX64};
        for (DType t : types) {
            int s = t.itemSize();
            for (long e : sizes(n)) {
                MemorySegment[] inputs = inputs(rnd, t, n, e);
                for (ReduceOp op : ReduceOp.values()) {
                    Array out = Array.zeros(t, Math.toIntExact(e));
                    g.allReduce(Array.wrap(inputs[r], t, Math.toIntExact(e)), out, op);
                    MemorySegment want = expected(g, CollectiveKind.ALL_REDUCE, e * s, () -> reference(op, t, inputs, e),
                            h -> hierarchicalReference(op, t, inputs, e, h), d -> ringReference(op, t, inputs, e, k(g), d));
                    if (out.segment().mismatch(want) != -1) {
                        bad.append("rank ").append(r).append(' ').append(op).append(' ').append(t).append(" E=").append(e).append('\n');
                    }
                    if (!sameOnEveryRank(g, out)) bad.append("rank ").append(r).append(' ').append(op).append(' ').append(t)
                            .append(" E=").append(e).append(": the ranks' results differ\n");
                }
                Array gathered = Array.zeros(t, Math.toIntExact(e * n));
                g.allGather(Array.wrap(inputs[r], t, Math.toIntExact(e)), gathered);
                for (int q = 0; q < n; q++) {
                    if (gathered.segment().asSlice(q * e * s, e * s).mismatch(inputs[q]) != -1) {
                        bad.append("rank ").append(r).append(" all_gather ").append(t).append(" E=").append(e).append(" block ").append(q).append('\n');
                        break;
                    }
                }
            }
            for (long c : new long[] {0, 1, 3, 17}) {
                MemorySegment[] inputs = inputs(rnd, t, n, c * n);
                Array out = Array.zeros(t, Math.toIntExact(c));
                Array in = Array.wrap(inputs[r], t, Math.toIntExact(c * n));
                byte[] before = in.toBytes();
                g.sumScatter(in, out);
                MemorySegment want = expected(g, CollectiveKind.SUM_SCATTER, c * n * s,
                        () -> reference(ReduceOp.SUM, t, inputs, c * n), h -> hierarchicalScatterReference(t, inputs, c * n, h),
                        d -> ringScatterReference(t, inputs, c, k(g), d));
                if (out.segment().mismatch(want.asSlice(r * c * s, c * s)) != -1) {
                    bad.append("rank ").append(r).append(" sum_scatter ").append(t).append(" C=").append(c).append('\n');
                }
                if (!java.util.Arrays.equals(before, in.toBytes())) bad.append("rank ").append(r).append(" sum_scatter changed its input\n");
            }
        }
        return bad.toString();
    }

    /**
     * float32 all_sum, all_gather and sum_scatter one element below, at and above every size up to 16 MiB where jdist's
     * default rules for this rank count change algorithm, values checked as {@link #checkAll} does.
     */
    public static String checkCrossovers(GroupImpl g, long seed) {
        int n = g.size();
        int r = g.rank();
        DType t = DType.FLOAT32;
        int s = t.itemSize();
        Random rnd = new Random(seed);
        StringBuilder bad = new StringBuilder();
        TreeSet<Long> reduceSizes = new TreeSet<>();
        TreeSet<Long> perRankSizes = new TreeSet<>();
        for (AlgorithmRules.Rule rule : AlgorithmRules.defaults().rules()) {
            if (rule.maxBytes() == Long.MAX_VALUE || rule.maxBytes() > (16L << 20) || n < rule.minRanks() || n > rule.maxRanks()) {
                continue;
            }
            for (long d = -1; d <= 1; d++) {
                if (rule.op() == CollectiveKind.ALL_REDUCE) reduceSizes.add(rule.maxBytes() / s + d);
                else perRankSizes.add(rule.maxBytes() / ((long) n * s) + d);
            }
        }
        for (long e : reduceSizes) {
            if (e < 0) continue;
            MemorySegment[] inputs = inputs(rnd, t, n, e);
            Array out = Array.zeros(t, Math.toIntExact(e));
            g.allReduce(Array.wrap(inputs[r], t, Math.toIntExact(e)), out, ReduceOp.SUM);
            MemorySegment want = expected(g, CollectiveKind.ALL_REDUCE, e * s, () -> reference(ReduceOp.SUM, t, inputs, e),
                    h -> hierarchicalReference(ReduceOp.SUM, t, inputs, e, h), d -> ringReference(ReduceOp.SUM, t, inputs, e, k(g), d));
            if (out.segment().mismatch(want) != -1) bad.append("rank ").append(r).append(" all_sum E=").append(e).append('\n');
            if (!sameOnEveryRank(g, out)) bad.append("rank ").append(r).append(" all_sum E=").append(e).append(": results differ\n");
        }
        for (long e : perRankSizes) {
            if (e < 0) continue;
            MemorySegment[] inputs = inputs(rnd, t, n, e * n);
            Array gathered = Array.zeros(t, Math.toIntExact(e * n));
            g.allGather(Array.wrap(inputs[r].asSlice(0, e * s), t, Math.toIntExact(e)), gathered);
            for (int q = 0; q < n; q++) {
                if (gathered.segment().asSlice(q * e * s, e * s).mismatch(inputs[q].asSlice(0, e * s)) != -1) {
                    bad.append("rank ").append(r).append(" all_gather E=").append(e).append(" block ").append(q).append('\n');
                    break;
                }
            }
            Array chunk = Array.zeros(t, Math.toIntExact(e));
            g.sumScatter(Array.wrap(inputs[r], t, Math.toIntExact(e * n)), chunk);
            MemorySegment want = expected(g, CollectiveKind.SUM_SCATTER, e * n * s, () -> reference(ReduceOp.SUM, t, inputs, e * n),
                    h -> hierarchicalScatterReference(t, inputs, e * n, h), d -> ringScatterReference(t, inputs, e, k(g), d));
            if (chunk.segment().mismatch(want.asSlice(r * e * s, e * s)) != -1) {
                bad.append("rank ").append(r).append(" sum_scatter C=").append(e).append('\n');
            }
        }
        return bad.toString();
    }

    /** Whether every rank holds the same bytes in {@code a} (gathered over the group and compared). */
    static boolean sameOnEveryRank(GroupImpl g, Array a) {
        long b = a.nbytes();
        if (b == 0) return true;
        Array all = Array.zeros(DType.UINT8, Math.toIntExact(b * g.size()));
        g.allGather(Array.wrap(a.segment(), DType.UINT8, Math.toIntExact(b)), all);
        for (int q = 0; q < g.size(); q++) if (all.segment().asSlice(q * b, b).mismatch(a.segment()) != -1) return false;
        return true;
    }

    /**
     * The documented value of the op's algorithm: §10.11's ({@code hier}, on the group's host layout) for a hierarchical
     * one, §10.4's ({@code ref}) for another mesh algorithm, §3.6.4's or §9's ({@code ring}, given the directions) for the
     * ring in either direction count.
     */
    private static MemorySegment expected(GroupImpl g, CollectiveKind kind, long bytes, java.util.function.Supplier<MemorySegment> ref,
                                          java.util.function.Function<HostLayout, MemorySegment> hier,
                                          java.util.function.IntFunction<MemorySegment> ring) {
        RingGroup rg = (RingGroup) g;
        Algorithm a = rg.algorithmFor(kind, bytes);
        // mapped here, not by RingGroup's own mapping, so that RingGroup running ring1 in two directions fails the check
        if (a.onRing()) return ring.apply(a == Algorithm.RING1 ? RingSchedule.ONE_DIRECTION : RingSchedule.BOTH_DIRECTIONS);
        return a.hierarchical() ? hier.apply(rg.hostLayout().orElseThrow()) : ref.get();
    }

    // ------------------------------------------------------------------ the ring's values (§3.6.4, §9, §10.12)

    private static int k(GroupImpl g) { return ((RingGroup) g).connectionsPerNeighbour(); }

    /**
     * §3.6.4's value of a ring all-reduce of {@code elements} on {@code k} connections in {@code directions} directions:
     * segment j of a part with direction d is {@code op(x_{j+d}, op(x_{j+2d}, … op(x_{j+(n-1)d}, x_j)))}; the small path
     * ({@code elements < n}) is one part of n elements with d = -1, so element i is segment i.
     */
    public static MemorySegment ringReference(ReduceOp op, DType t, MemorySegment[] x, long elements, int k, int directions) {
        int n = x.length;
        int s = t.itemSize();
        MemorySegment out = copy(x[0]);
        // the parts from the documented rule, not from RingSchedule, so that a wrong schedule cannot agree with itself
        boolean small = elements < n;
        long parts = small ? 1 : Math.max(1, Math.min((long) directions * k, elements * s / (n * leastPart(directions))));
        long step = small ? n : (elements + parts - 1) / parts;
        for (long i = 0; i < parts; i++) {
            long offset = Math.min(elements, i * step);
            long length = small ? n : Math.min(elements, (i + 1) * step) - offset;
            int d = small ? -1 : directions == 1 || i % 2 == 0 ? +1 : -1;
            long seg = (length + n - 1) / n;
            for (int j = 0; j < n; j++) {
                long from = offset + Math.min(j * seg, length);
                long to = Math.min(elements, offset + Math.min((j + 1) * seg, length));
                if (to <= from) continue;
                int[] order = new int[n];
                for (int q = 0; q < n - 1; q++) order[q] = Math.floorMod(j + (q + 1) * d, n);
                order[n - 1] = j;
                MemorySegment.copy(chain(op, t, x, order, from * s, (to - from) * s), 0, out, from * s, (to - from) * s);
            }
        }
        return out;
    }

    /**
     * §9's value of a ring sum_scatter of n chunks of {@code chunk} elements (one piece of the work buffer): within each
     * part (direction d) chunk j is {@code op(x_j, op(x_{j+d}, … x_{j+(n-1)d}))}; the whole output, chunk j at j·chunk.
     */
    public static MemorySegment ringScatterReference(DType t, MemorySegment[] x, long chunk, int k, int directions) {
        int n = x.length;
        int s = t.itemSize();
        MemorySegment out = copy(x[0]);
        long p = Math.max(1, Math.min((long) directions * k, chunk * n * s / (n * leastPart(directions))));
        if (chunk < p || chunk == 0) p = 1;
        long step = (chunk + p - 1) / p;
        for (int i = 0; i < p; i++) {
            long from = Math.min(chunk, i * step);
            long len = Math.min(chunk, (i + 1) * step) - from;
            if (len == 0) continue;
            int d = directions == RingSchedule.ONE_DIRECTION || i % 2 == 0 ? +1 : -1;
            for (int j = 0; j < n; j++) {
                int[] order = new int[n];
                for (int q = 0; q < n; q++) order[q] = Math.floorMod(j + q * d, n);
                long at = (j * chunk + from) * s;
                MemorySegment.copy(chain(ReduceOp.SUM, t, x, order, at, len * s), 0, out, at, len * s);
            }
        }
        return out;
    }

    /** The documented least bytes per rank per part: §3.6.1's 256 KiB, §10.12's 16 KiB in one direction (not RingSchedule's). */
    private static long leastPart(int directions) {
        return directions == 1 ? 16_384L : 262_144L;
    }

    /** {@code op(x_{order[0]}, op(x_{order[1]}, … x_{order[last]}))} over bytes {@code [at, at+bytes)}, right to left. */
    private static MemorySegment chain(ReduceOp op, DType t, MemorySegment[] x, int[] order, long at, long bytes) {
        MemorySegment acc = copy(x[order[order.length - 1]].asSlice(at, bytes));
        for (int i = order.length - 2; i >= 0; i--) {
            MemorySegment left = copy(x[order[i]].asSlice(at, bytes));
            Reducer.reduce(op, t, left, 0, acc, 0, bytes / t.itemSize());
            acc = left;
        }
        return acc;
    }

    /**
     * The ring's multi-part sizes: all_sum and all_max, all_gather and sum_scatter of a few dtypes at sizes where the part
     * count changes (one part, 2 and 2k parts of 256 KiB segments, uneven ends), values against §3.6.4 and §9 for whichever
     * ring the group runs ({@code JDIST_ALGO=ring} or {@code ring1}). Sizes stay within one sum_scatter piece (16 MiB).
     */
    public static String checkRingParts(RingGroup g, long seed) {
        int n = g.size();
        int r = g.rank();
        int k = g.connectionsPerNeighbour();
        Random rnd = new Random(seed);
        StringBuilder bad = new StringBuilder();
        for (DType t : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.INT32}) {
            int s = t.itemSize();
            long unit = (long) n * RingSchedule.MIN_PART_BYTES / s;      // elements per part at the least part size
            long unit1 = (long) n * 16_384L / s;   // the same in one direction (ring1, §10.12), as documented
            for (long e : new long[] {2 * unit1 - 1, 2 * unit1 + 7, 2 * unit - 1, 2 * unit + 7, 2L * k * unit + 3 * n + 1}) {
                MemorySegment[] inputs = inputs(rnd, t, n, e);
                for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
                    Array out = Array.zeros(t, Math.toIntExact(e));
                    g.allReduce(Array.wrap(inputs[r], t, Math.toIntExact(e)), out, op);
                    MemorySegment want = expected(g, CollectiveKind.ALL_REDUCE, e * s, () -> reference(op, t, inputs, e),
                            h -> hierarchicalReference(op, t, inputs, e, h), d -> ringReference(op, t, inputs, e, k, d));
                    long at = out.segment().mismatch(want);
                    if (at != -1) {
                        bad.append("rank ").append(r).append(' ').append(op).append(' ').append(t).append(" E=").append(e)
                                .append(" byte ").append(at).append('\n');
                    }
                }
            }
            for (long c : new long[] {16_384L / s * 2 + 5, RingSchedule.MIN_PART_BYTES / s * 2 + 5,
                    RingSchedule.MIN_PART_BYTES / s * 2L * k + 1}) {
                MemorySegment[] inputs = inputs(rnd, t, n, c * n);
                Array chunk = Array.zeros(t, Math.toIntExact(c));
                g.sumScatter(Array.wrap(inputs[r], t, Math.toIntExact(c * n)), chunk);
                MemorySegment want = expected(g, CollectiveKind.SUM_SCATTER, c * n * s, () -> reference(ReduceOp.SUM, t, inputs, c * n),
                        h -> hierarchicalScatterReference(t, inputs, c * n, h), d -> ringScatterReference(t, inputs, c, k, d));
                if (chunk.segment().mismatch(want.asSlice(r * c * s, c * s)) != -1) {
                    bad.append("rank ").append(r).append(" sum_scatter ").append(t).append(" C=").append(c).append('\n');
                }
                Array gathered = Array.zeros(t, Math.toIntExact(c * n));
                g.allGather(Array.wrap(inputs[r].asSlice(0, c * s), t, Math.toIntExact(c)), gathered);
                for (int q = 0; q < n; q++) {
                    if (gathered.segment().asSlice(q * c * s, c * s).mismatch(inputs[q].asSlice(0, c * s)) != -1) {
                        bad.append("rank ").append(r).append(" all_gather ").append(t).append(" E=").append(c).append(" block ").append(q)
                                .append('\n');
                        break;
                    }
                }
            }
        }
        return bad.toString();
    }
}
