package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.TestGroups;

import java.util.ArrayList;
import java.util.List;

/**
 * One rank of a multi-process ring check, started by {@link RingMultiProcessIT} with MLX_RANK and
 * MLX_HOSTFILE as a scheduler would: checks the values of every op for every dtype (split and
 * sumScatter included, and arrays large enough for several parts), prints what is wrong and exits 1
 * on any mismatch, exits 0 otherwise.
 */
public final class RingCheckProgram {
    private final Group g;
    private final int n;
    private final int r;
    private final List<String> errors = new ArrayList<>();

    private RingCheckProgram(Group g) {
        this.g = g;
        this.n = g.size();
        this.r = g.rank();
    }

    public static void main(String[] args) {
        Group world = Distributed.init(true, "ring");
        RingCheckProgram p = new RingCheckProgram(world);
        try {
            p.runAll();
        } catch (RuntimeException e) {
            e.printStackTrace();
            p.errors.add("exception: " + e);
        }
        if (!p.errors.isEmpty()) {
            System.out.println("rank " + world.rank() + ": " + p.errors.size() + " FAILURE(S)");
            p.errors.stream().limit(30).forEach(s -> System.out.println("  " + s));
            System.out.flush();
            System.exit(1);
        }
        String transport = TestGroups.impl(world) instanceof RingGroup rg ? rg.transportName() : "?";
        System.out.println("rank " + world.rank() + " of " + world.size() + ": OK (transport " + transport + ")");
        System.out.flush();
        Distributed.reset();
        System.exit(0);
    }

    /** Rank q's value at element i (exact in every dtype; unsigned types stay non-negative). */
    static double value(DType t, int q, long i) {
        if (t == DType.BOOL) return ((i + q) % 3 == 0) ? 1 : 0;
        double v = (i % 5) + q;
        return t.isUnsigned() ? v : v - 2;
    }

    static double imag(int q, long i) { return q - (i % 3); }

    static Array input(DType t, int q, long e) {
        Array a = Array.zeros(t, Math.toIntExact(e));
        for (long i = 0; i < e; i++) {
            if (t == DType.COMPLEX64) a.setComplex(i, (float) value(t, q, i), (float) imag(q, i));
            else a.setDouble(i, value(t, q, i));
        }
        return a;
    }

    private void runAll() {
        int large = 2 * n * 262144 * 2 + 24;   // bytes: enough for several parts with k <= 2
        for (DType t : DType.values()) {
            for (long e : new long[] {0, 1, n - 1, n, 10, 1001}) {
                checkReductions(t, e);
            }
            checkGather(t);
            checkSumScatter(t, 3);
            checkPointToPoint(t, 7);
        }
        for (DType t : new DType[] {DType.FLOAT32, DType.INT64}) {
            long e = large / t.itemSize() + 3;
            checkReductions(t, e);
            checkSumScatter(t, e / n + 1);
            checkPointToPoint(t, e);
        }
        Array big = input(DType.INT32, r, 200_000);
        checkGatherOf(big, DType.INT32, 200_000);
        checkSplit();
        // the parent ring is still usable after split
        checkReductions(DType.FLOAT32, 1001);
    }

    private void checkReductions(DType t, long e) {
        Array in = input(t, r, e);
        Array sum = g.allSum(in);
        Array max = g.allMax(in);
        Array min = g.allMin(in);
        long stride = e > 5000 ? 97 : 1;
        for (long i = 0; i < e; i = (i + stride < e || i == e - 1) ? i + stride : e - 1) {
            double s = 0, mx = Double.NEGATIVE_INFINITY, mn = Double.POSITIVE_INFINITY;
            double si = 0;
            int mxq = 0, mnq = 0;
            for (int q = 0; q < n; q++) {
                double v = value(t, q, i);
                s = t == DType.BOOL ? Math.max(s, v) : s + v;
                si += imag(q, i);
                if (v > mx || (t == DType.COMPLEX64 && v == mx && imag(q, i) > imag(mxq, i))) { mx = v; mxq = q; }
                if (v < mn || (t == DType.COMPLEX64 && v == mn && imag(q, i) < imag(mnq, i))) { mn = v; mnq = q; }
            }
            expect(t + " all_sum E=" + e + " [" + i + "]", sum.getDouble(i), s);
            expect(t + " all_max E=" + e + " [" + i + "]", max.getDouble(i), mx);
            expect(t + " all_min E=" + e + " [" + i + "]", min.getDouble(i), mn);
            if (t == DType.COMPLEX64) {
                expect(t + " all_sum imag E=" + e + " [" + i + "]", sum.getImag(i), si);
                expect(t + " all_max imag E=" + e + " [" + i + "]", max.getImag(i), imag(mxq, i));
                expect(t + " all_min imag E=" + e + " [" + i + "]", min.getImag(i), imag(mnq, i));
            }
            if (errors.size() > 20) return;
        }
    }

    private void checkGather(DType t) {
        Array in = input(t, r, 6).reshape(3, 2);
        Array out = g.allGather(in);
        if (out.shape(0) != 3 * n || out.shape(1) != 2) errors.add(t + " all_gather shape " + java.util.Arrays.toString(out.shape()));
        for (int q = 0; q < n; q++) {
            for (int i = 0; i < 6; i++) expect(t + " all_gather block " + q + " [" + i + "]", out.getDouble(q * 6L + i), value(t, q, i));
        }
        Array scalar = g.allGather(input(t, r, 1).reshape());
        if (scalar.ndim() != 1 || scalar.shape(0) != n) errors.add(t + " all_gather of a 0-d array: shape " + java.util.Arrays.toString(scalar.shape()));
    }

    private void checkGatherOf(Array in, DType t, long e) {
        Array out = g.allGather(in);
        for (int q = 0; q < n; q++) {
            for (long i = 0; i < e; i += 997) expect(t + " big all_gather block " + q + " [" + i + "]", out.getDouble(q * e + i), value(t, q, i));
        }
    }

    private void checkSumScatter(DType t, long chunk) {
        long e = chunk * n;
        Array in = input(t, r, e).reshape(Math.toIntExact(e), 1);
        Array out = g.sumScatter(in);
        if (out.shape(0) != chunk) errors.add(t + " sum_scatter shape " + java.util.Arrays.toString(out.shape()));
        long stride = chunk > 5000 ? 89 : 1;
        for (long i = 0; i < chunk; i = (i + stride < chunk || i == chunk - 1) ? i + stride : chunk - 1) {
            long gi = r * chunk + i;
            double s = 0, si = 0;
            for (int q = 0; q < n; q++) {
                s = t == DType.BOOL ? Math.max(s, value(t, q, gi)) : s + value(t, q, gi);
                si += imag(q, gi);
            }
            expect(t + " sum_scatter C=" + chunk + " [" + i + "]", out.getDouble(i), s);
            if (t == DType.COMPLEX64) expect(t + " sum_scatter imag [" + i + "]", out.getImag(i), si);
            if (errors.size() > 20) return;
        }
    }

    private void checkPointToPoint(DType t, long e) {
        int right = (r + 1) % n;
        int left = (r - 1 + n) % n;
        Array mine = input(t, r, e);
        Array got;
        if (r % 2 == 0) {
            g.send(mine, right);
            got = g.recvLike(mine, left);
        } else {
            got = g.recvLike(mine, left);
            g.send(mine, right);
        }
        for (long i = 0; i < e; i += Math.max(1, e / 50)) {
            expect(t + " recv from " + left + " E=" + e + " [" + i + "]", got.getDouble(i), value(t, left, i));
        }
        if (n > 3) {
            try {
                g.send(mine, (r + 2) % n);
                errors.add("send to non-neighbour " + (r + 2) % n + " did not fail");
            } catch (IllegalArgumentException expected) {
                // the ring only talks to neighbours
            }
        }
    }

    private void checkSplit() {
        int color = r % 2;
        Group sub = g.split(color, n - r);       // reverse parent order within each colour
        List<Integer> members = new ArrayList<>();
        for (int q = n - 1; q >= 0; q--) if (q % 2 == color) members.add(q);
        int wantRank = members.indexOf(r);
        if (sub.size() != members.size() || sub.rank() != wantRank) {
            errors.add("split: got rank " + sub.rank() + " of " + sub.size() + ", want " + wantRank + " of " + members.size());
        }
        if (sub.size() > 1 && TestGroups.impl(sub) instanceof RingGroup sr && TestGroups.impl(g) instanceof RingGroup pr
                && !sr.transportName().equals(pr.transportName())) {
            errors.add("split: the sub-group uses transport " + sr.transportName() + ", the parent " + pr.transportName());
        }
        Array s = sub.allSum(Array.fromDoubles(DType.INT32, new double[] {r, 1}, 2));
        double want = members.stream().mapToInt(Integer::intValue).sum();
        expect("split all_sum", s.getDouble(0), want);
        expect("split all_sum count", s.getDouble(1), members.size());
        Array big = sub.allSum(input(DType.FLOAT32, r, 300_000));
        for (long i = 0; i < 300_000; i += 1009) {
            double w = 0;
            for (int q : members) w += value(DType.FLOAT32, q, i);
            expect("split big all_sum [" + i + "]", big.getDouble(i), w);
        }
        sub.close();
    }

    private void expect(String what, double got, double want) {
        if (got != want && !(Double.isNaN(got) && Double.isNaN(want))) {
            errors.add(what + ": got " + got + ", want " + want);
        }
    }
}
