package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Reducer;
import dev.jdist.ring.RingGroup;
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
                            h -> hierarchicalReference(op, t, inputs, e, h));
                    if (want != null && out.segment().mismatch(want) != -1) {
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
                        () -> reference(ReduceOp.SUM, t, inputs, c * n), h -> hierarchicalScatterReference(t, inputs, c * n, h));
                if (want != null && out.segment().mismatch(want.asSlice(r * c * s, c * s)) != -1) {
                    bad.append("rank ").append(r).append(" sum_scatter ").append(t).append(" C=").append(c).append('\n');
                }
                if (!java.util.Arrays.equals(before, in.toBytes())) bad.append("rank ").append(r).append(" sum_scatter changed its input\n");
            }
        }
        return bad.toString();
    }

    /**
     * float32 all_sum, all_gather and sum_scatter one element below, at and above every size where jdist's default
     * rules change algorithm, values checked as {@link #checkAll} does.
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
            if (rule.maxBytes() == Long.MAX_VALUE || rule.maxBytes() > (8L << 20)) continue;
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
                    h -> hierarchicalReference(ReduceOp.SUM, t, inputs, e, h));
            if (want != null && out.segment().mismatch(want) != -1) bad.append("rank ").append(r).append(" all_sum E=").append(e).append('\n');
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
                    h -> hierarchicalScatterReference(t, inputs, e * n, h));
            if (want != null && chunk.segment().mismatch(want.asSlice(r * e * s, e * s)) != -1) {
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
     * one, §10.4's ({@code ref}) for another mesh algorithm; null (values checked by the ring's own tests) for the ring.
     */
    private static MemorySegment expected(GroupImpl g, CollectiveKind kind, long bytes, java.util.function.Supplier<MemorySegment> ref,
                                          java.util.function.Function<HostLayout, MemorySegment> hier) {
        RingGroup rg = (RingGroup) g;
        Algorithm a = rg.algorithmFor(kind, bytes);
        if (a == Algorithm.RING) return null;
        return a.hierarchical() ? hier.apply(rg.hostLayout().orElseThrow()) : ref.get();
    }

}
