package dev.jdist.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.ReduceOp;
import dev.jdist.algo.Algorithm;
import dev.jdist.algo.AlgorithmChoice;
import dev.jdist.algo.AlgorithmPolicy;
import dev.jdist.algo.CollectiveKind;
import dev.jdist.algo.HostLayout;
import dev.jdist.spi.GroupAccess;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.RankRecord;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * What every rank of a {@code jdist bench} job runs: the sweep, timed on each rank, checked after
 * the timed iterations; rank 0 prints one {@code JDIST-BENCH <json>} line per row.
 *
 * <p>Buffers are allocated once per row, outside the timed region, and the ops write into them
 * ({@code *Into} variants), so the figures measure communication, not allocation.
 */
public final class BenchWorker {
    /** Prefix of the machine-readable lines rank 0 prints; the bench command parses them. */
    public static final String LINE_PREFIX = "JDIST-BENCH ";
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The sweep every rank runs (passed as JSON in the first argument).
     *
     * @param tune         measure every algorithm of each op at each size ({@code jdist bench --tune}), out-of-place only
     * @param warmupSeconds the least time each op's JIT warm-up lasts on every rank ({@code --jit-warmup})
     */
    public record Spec(List<String> ops, List<Long> sizes, String dtype, int warmup, int iters, List<String> modes, boolean tune,
                       double warmupSeconds) {
        /** A sweep of the algorithms the group chooses itself, with the default warm-up. */
        public Spec(List<String> ops, List<Long> sizes, String dtype, int warmup, int iters, List<String> modes) {
            this(ops, sizes, dtype, warmup, iters, modes, false, Double.parseDouble(DEFAULT_WARMUP_SECONDS));
        }
    }

    /** {@code --jit-warmup}'s default: long enough for the compiler threads to finish on a busy 2-core machine. */
    public static final String DEFAULT_WARMUP_SECONDS = "2";

    private BenchWorker() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: BenchWorker '<json spec>' (started by `jdist bench`)");
            System.exit(2);
        }
        Spec spec = JSON.readValue(args[0], Spec.class);
        // Strict: a rank whose backend failed to start must not benchmark itself as a 1-rank group.
        try (Group group = Distributed.init(true, "any")) {
            run(group, spec);
        } finally {
            Distributed.reset();
        }
    }

    static void run(Group group, Spec spec) throws IOException {
        if (spec.tune()) {
            tune(group, spec);
            return;
        }
        DType dtype = DType.fromMlxName(spec.dtype());
        for (String opName : spec.ops()) {
            BenchOp op = BenchOp.parse(opName);
            if (op == BenchOp.SEND_RECV && group.size() < 2) {
                if (group.rank() == 0) System.err.println("jdist bench: send_recv needs at least 2 ranks; skipped");
                continue;
            }
            warmUp(group, op, dtype, spec.warmupSeconds());
            for (long size : spec.sizes()) {
                for (String mode : spec.modes()) {
                    BenchResult r = runRow(group, op, dtype, size, mode, spec.warmup(), spec.iters());
                    if (group.rank() == 0) {
                        System.out.println(LINE_PREFIX + JSON.writeValueAsString(r));
                        System.out.flush();
                    }
                }
            }
        }
    }

    /**
     * {@code jdist bench --tune}: every size of every op once per algorithm that implements it, one after the other
     * (so that a noisy moment hurts every algorithm of a size alike), each forced on every rank in the same order.
     */
    static void tune(Group group, Spec spec) throws IOException {
        GroupImpl impl = GroupAccess.impl(group);
        String limited = impl == null ? null : impl.jdistReachLimited();
        if (limited != null) {
            throw new IllegalStateException("jdist bench --tune measures the algorithms between jdist ranks, and this job's group "
                    + "runs the ring at every size, so there is nothing to tune: " + limited);
        }
        AlgorithmChoice choice = impl == null ? null : impl.algorithmChoice().orElse(null);
        if (choice == null) {
            throw new IllegalStateException("jdist bench --tune measures the ring's algorithms between jdist ranks, but this job's "
                    + "group is " + group.backend() + (group.backend().equals("ring") ? " without a job token (MLX peers may be "
                    + "present: do not use --mlx-compatible)" : "") + "; run it with the ring backend");
        }
        DType dtype = DType.fromMlxName(spec.dtype());
        AlgorithmPolicy base = AlgorithmPolicy.defaults();
        try {
            for (String opName : spec.ops()) {
                BenchOp op = BenchOp.parse(opName);
                CollectiveKind kind = kindOf(op);
                if (kind == null) continue;
                // the hierarchical algorithms only where they apply: several hosts, some with several ranks (docs/reference/collectives.md §10.11)
                HostLayout layout = choice.hostLayout();
                boolean hierarchy = layout.hosts() > 1 && layout.sharesHosts();
                List<Algorithm> candidates = Arrays.stream(Algorithm.values())
                        .filter(a -> a.supports(kind) && (hierarchy || !a.hierarchical())).toList();
                for (Algorithm a : candidates) {
                    choice.useAlgorithmPolicy(base.forcing(kind, a));
                    warmUp(group, op, dtype, spec.warmupSeconds());
                }
                // one untimed row each first: right after the warm-ups the JIT compiler threads are still busy (all
                // ranks share the CPUs), which would slow whichever algorithm happens to be measured first
                for (Algorithm a : candidates) {
                    choice.useAlgorithmPolicy(base.forcing(kind, a));
                    runRow(group, op, dtype, spec.sizes().getFirst(), OUT_OF_PLACE, spec.warmup(), spec.iters());
                }
                for (long size : spec.sizes()) {
                    for (Algorithm a : candidates) {
                        choice.useAlgorithmPolicy(base.forcing(kind, a));
                        BenchResult r = runRow(group, op, dtype, size, OUT_OF_PLACE, spec.warmup(), spec.iters());
                        if (group.rank() == 0) {
                            System.out.println(LINE_PREFIX + JSON.writeValueAsString(r));
                            System.out.flush();
                        }
                    }
                }
            }
        } finally {
            choice.useAlgorithmPolicy(base);
        }
    }

    /** The collective kind whose algorithm {@code op} chooses; null for send_recv. */
    static CollectiveKind kindOf(BenchOp op) {
        return switch (op) {
            case ALL_SUM, ALL_MAX, ALL_MIN -> CollectiveKind.ALL_REDUCE;
            case ALL_GATHER -> CollectiveKind.ALL_GATHER;
            case SUM_SCATTER -> CollectiveKind.SUM_SCATTER;
            case SEND_RECV, BROADCAST, ALL_TO_ALL -> null;
        };
    }

    /** The algorithm the group runs {@code op} of {@code bytes} with (the table's algo column). */
    private static String algorithmOf(Group g, BenchOp op, long bytes) {
        CollectiveKind kind = kindOf(op);
        // after a row ran: broadcast and all_to_all on a group that chooses algorithms ran over its mesh
        AlgorithmChoice choice = choiceOf(g);
        if (op == BenchOp.BROADCAST && choice != null) return "tree";   // PeerSchedules.broadcast
        if (kind == null) return op == BenchOp.SEND_RECV || choice != null ? "p2p" : g.backend();
        return choice != null ? choice.algorithmFor(kind, bytes).text() : g.backend();
    }

    /** How many hosts the ranks run on, where the group knows (0 otherwise). */
    private static int hostsOf(Group g) {
        AlgorithmChoice choice = choiceOf(g);
        if (choice != null) return choice.hostLayout().hosts();
        return g.jobTable().map(t -> (int) t.ranks().stream().map(RankRecord::bootId).distinct().count()).orElse(0);
    }

    /** How the group chooses its algorithms between jdist ranks ({@link GroupImpl#algorithmChoice()}), or null. */
    private static AlgorithmChoice choiceOf(Group g) {
        GroupImpl impl = GroupAccess.impl(g);
        return impl == null ? null : impl.algorithmChoice().orElse(null);
    }

    /**
     * Untimed calls before an op's first row, so that the JIT has compiled its paths (on a 2-core machine the compiler
     * threads otherwise compete with the first rows, and a fixed count of calls is over before they are done). Rounds
     * of small and medium calls, at least {@value #WARMUP_MIN_ROUNDS}, until every rank has spent {@code seconds} in
     * them: after each round the ranks agree (all_max of "I want another round"), so that every rank makes the same
     * calls; never more than {@value #WARMUP_MAX_ROUNDS} rounds.
     */
    private static void warmUp(Group g, BenchOp op, DType dtype, double seconds) {
        long start = System.nanoTime();
        long wanted = (long) (seconds * 1e9);
        for (int round = 0; round < WARMUP_MAX_ROUNDS; round++) {
            runRow(g, op, dtype, 4L * dtype.itemSize() * g.size(), OUT_OF_PLACE, WARMUP_SMALL_CALLS, 1);
            runRow(g, op, dtype, 256L << 10, OUT_OF_PLACE, WARMUP_MEDIUM_CALLS, 1);
            if (round + 1 < WARMUP_MIN_ROUNDS) continue;
            int mine = System.nanoTime() - start < wanted ? 1 : 0;
            if (g.allMax(Array.of(mine)).getLong(0) == 0) return;
        }
    }

    private static final int WARMUP_SMALL_CALLS = 300;
    private static final int WARMUP_MEDIUM_CALLS = 10;
    private static final int WARMUP_MIN_ROUNDS = 10;
    private static final int WARMUP_MAX_ROUNDS = 10_000;

    /** Output into a preallocated array ({@code allReduceInto} and friends): communication only. */
    public static final String OUT_OF_PLACE = "out-of-place";
    /** The output is the input array. */
    public static final String IN_PLACE = "in-place";
    /** Each call returns a new array ({@code allSum(x)}, {@code allGather(x)}, ...): the API's default path, allocation included. */
    public static final String RETURNED = "returned";
    public static final List<String> MODES = List.of(OUT_OF_PLACE, IN_PLACE, RETURNED);

    private static BenchResult runRow(Group g, BenchOp op, DType dtype, long size, String mode, int warmup, int iters) {
        boolean inPlace = mode.equals(IN_PLACE);
        boolean returned = mode.equals(RETURNED);
        int n = g.size();
        int r = g.rank();
        int s = dtype.itemSize();
        // Per-rank element counts: all_gather's size is its output, sum_scatter's its input (nccl-tests' convention).
        long perRank = switch (op) {
            case ALL_GATHER, SUM_SCATTER -> Math.max(1, size / s / n);
            case ALL_TO_ALL -> Math.max(1, size / s / n) * n;   // whole blocks
            default -> Math.max(1, size / s);
        };
        int count = Math.toIntExact(perRank);
        Array in = switch (op) {
            case SUM_SCATTER -> Array.zeros(dtype, count * n);
            default -> Array.zeros(dtype, count);
        };
        Array out = switch (op) {
            case ALL_GATHER -> Array.zeros(dtype, count * n);
            case SUM_SCATTER, ALL_TO_ALL -> Array.zeros(dtype, count);   // all_to_all has no in-place form
            default -> inPlace ? in : Array.zeros(dtype, count);
        };
        fill(in, r, 0);

        long[] times = new long[iters];
        for (int i = -warmup; i < iters; i++) {
            long t0 = System.nanoTime();
            runOnce(g, op, in, out, returned); // a returned array becomes garbage at once, as in a training loop
            long t = System.nanoTime() - t0;
            if (i >= 0) times[i] = t;
        }
        // Check on fresh inputs (in-place iterations changed them).
        fill(in, r, 0);
        long wrong = countWrong(g, op, runOnce(g, op, in, out, returned));
        Array wrongAll = g.allSum(Array.of((long) wrong));
        Array rss = g.allGather(Array.of(peakRssBytes()));
        long[] rssPerRank = new long[n];
        long rssMax = 0;
        for (int q = 0; q < n; q++) {
            rssPerRank[q] = rss.getLong(q);
            rssMax = Math.max(rssMax, rssPerRank[q]);
        }

        Arrays.sort(times);
        double median = times.length == 0 ? 0 : times[times.length / 2] / 1e3;
        double p99 = times.length == 0 ? 0 : times[Math.min(times.length - 1, (int) Math.ceil(times.length * 0.99) - 1)] / 1e3;
        if (op == BenchOp.SEND_RECV) {
            median /= 2; // a ping-pong round trip carries the message twice
            p99 /= 2;
        }
        long bytes = switch (op) {
            case ALL_GATHER, SUM_SCATTER -> perRank * n * s;
            default -> perRank * s;
        };
        double algbw = median > 0 ? bytes / (median * 1e3) : 0;
        return new BenchResult(op.cliName(), mode, bytes, bytes / s, dtype.mlxName(),
                op.redop(), n, median, p99, algbw, algbw * op.busFactor(n), wrongAll.getLong(0), rssMax, rssPerRank,
                algorithmOf(g, op, bytes), hostsOf(g));
    }

    /** One call of {@code op}; returns the array holding the result ({@code out}, or the new array when {@code returned}). */
    private static Array runOnce(Group g, BenchOp op, Array in, Array out, boolean returned) {
        if (returned) {
            return switch (op) {
                case ALL_SUM -> g.allSum(in);
                case ALL_MAX -> g.allMax(in);
                case ALL_MIN -> g.allMin(in);
                case ALL_GATHER -> g.allGather(in);
                case SUM_SCATTER -> g.sumScatter(in);
                case BROADCAST -> g.broadcast(in, 0);
                case ALL_TO_ALL -> g.allToAll(in);
                case SEND_RECV -> {
                    if (g.rank() == 0) {
                        g.send(in, 1);
                        yield g.recvLike(in, 1);
                    } else if (g.rank() == 1) {
                        Array got = g.recvLike(in, 0);
                        g.send(got, 0);
                        yield got;
                    }
                    yield out;
                }
            };
        }
        switch (op) {
            case ALL_SUM -> g.allReduceInto(in, out, ReduceOp.SUM);
            case ALL_MAX -> g.allReduceInto(in, out, ReduceOp.MAX);
            case ALL_MIN -> g.allReduceInto(in, out, ReduceOp.MIN);
            case ALL_GATHER -> g.allGatherInto(in, out);
            case SUM_SCATTER -> g.sumScatterInto(in, out);
            case BROADCAST -> {
                g.broadcastInto(in, 0);   // the buffer is the root's data on the root, overwritten elsewhere
                return in;
            }
            case ALL_TO_ALL -> g.allToAllInto(in, out);
            case SEND_RECV -> {
                if (g.rank() == 0) {
                    g.send(in, 1);
                    g.recvInto(out, 1);
                } else if (g.rank() == 1) {
                    g.recvInto(out, 0);
                    g.send(out, 0);
                }
            }
        }
        return out;
    }

    /** Rank-dependent small integers, exact in every dtype even after summing over many ranks. */
    static double value(int rank, long index) {
        return (rank * 7L + index) % 5;
    }

    /** Fills {@code a} with {@code value(rank, firstIndex + i)}: one period by hand, then doubling copies. */
    static void fill(Array a, int rank, long firstIndex) {
        long n = a.size();
        long period = Math.min(n, 5);
        for (long i = 0; i < period; i++) a.setDouble(i, value(rank, firstIndex + i));
        MemorySegment seg = a.segment();
        long s = a.dtype().itemSize();
        for (long done = period; done < n; ) {
            long chunk = Math.min(done - done % period, n - done);
            MemorySegment.copy(seg, 0, seg, done * s, chunk * s);
            done += chunk;
        }
    }

    private static long countWrong(Group g, BenchOp op, Array out) {
        int n = g.size();
        int r = g.rank();
        boolean bool = out.dtype() == DType.BOOL;
        long wrong = 0;
        long len = out.size();
        if (op == BenchOp.SEND_RECV && r > 1) return 0; // only ranks 0 and 1 take part in the ping-pong
        for (long i = 0; i < len; i++) {
            double expected = switch (op) {
                case ALL_SUM -> bool ? anyNonZero(n, i) : sum(n, i);
                case ALL_MAX -> bool ? anyNonZero(n, i) : max(n, i);
                case ALL_MIN -> min(n, i, bool);
                case ALL_GATHER -> value((int) (i / (len / n)), i % (len / n));
                case SUM_SCATTER -> bool ? anyNonZero(n, r * len + i) : sum(n, r * len + i);
                case SEND_RECV, BROADCAST -> value(0, i); // rank 1 echoes rank 0's message back; rank 0 is the root
                case ALL_TO_ALL -> value((int) (i / (len / n)), r * (len / n) + i % (len / n)); // rank q's block r
            };
            double got = out.getDouble(i);
            if (bool) expected = expected != 0 ? 1 : 0;
            if (got != expected) wrong++;
        }
        return wrong;
    }

    private static double sum(int n, long i) {
        double s = 0;
        for (int q = 0; q < n; q++) s += value(q, i);
        return s;
    }

    private static double max(int n, long i) {
        double m = Double.NEGATIVE_INFINITY;
        for (int q = 0; q < n; q++) m = Math.max(m, value(q, i));
        return m;
    }

    private static double min(int n, long i, boolean bool) {
        double m = Double.POSITIVE_INFINITY;
        for (int q = 0; q < n; q++) m = Math.min(m, bool ? (value(q, i) != 0 ? 1 : 0) : value(q, i));
        return m;
    }

    private static double anyNonZero(int n, long i) {
        for (int q = 0; q < n; q++) if (value(q, i) != 0) return 1;
        return 0;
    }

    /** Peak resident set size of this process (Linux VmHWM); 0 where /proc is absent. */
    static long peakRssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: report 0 rather than fail the benchmark
        }
        return 0;
    }
}
