package dev.jdist.mpi;

import dev.jdist.Array;
import dev.jdist.CollectiveChecks;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Reducer;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The program {@code MpiIT} runs under {@code mpirun}: every op, every dtype, split, send/recv between
 * every pair, MPI's error text, with expected values computed locally (every rank can regenerate every
 * rank's input). Exits 0 when all checks pass; prints the mismatch and halts with 1 otherwise.
 *
 * <p>Arguments: {@code <expected world size> [any] [chunk=N] [gc]}: {@code any} forms the world with
 * {@code Distributed.init()} (backend "any") instead of {@code init(true, "mpi")}; {@code chunk=N}
 * makes every MPI call carry at most N elements, to exercise the paths for counts above 2^31−1;
 * {@code gc} runs a full garbage collection every 20 ms throughout, so that memory of arrays nothing
 * refers to any more is released while operations run (MPI must never read or write released memory).
 */
public final class MpiCheckProgram {
    private static final int[] SIZES = {1, 5, 1000, 40_000};
    private static int checks;
    private static String tag = "";

    public static void main(String[] args) throws Exception {
        try {
            run(args);
        } catch (Throwable t) {
            System.out.println("MPI-CHECK FAILED " + tag + ": " + t);
            t.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] args) throws Exception {
        int expectedSize = Integer.parseInt(args[0]);
        boolean any = Arrays.asList(args).contains("any");
        for (String a : args) {
            if (a.startsWith("chunk=")) MpiGroup.maxCount = Long.parseLong(a.substring(6));
        }
        if (Arrays.asList(args).contains("gc")) {
            Thread gc = new Thread(() -> {
                while (true) {
                    System.gc();
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "check-gc");
            gc.setDaemon(true);
            gc.start();
        }
        Group world = any ? Distributed.init() : Distributed.init(true, "mpi");
        tag = "rank " + world.rank();
        expect(world.backend().equals("mpi"), "backend is " + world.backend());
        expect(world.size() == expectedSize, "world size " + world.size() + " != " + expectedSize);
        expect(Distributed.init(false, "mpi") == world || Distributed.init(false, "mpi").rank() == world.rank(), "cached group");
        int n = world.size();
        int r = world.rank();

        for (DType t : DType.values()) {
            for (int e : SIZES) {
                List<Array> inputs = new ArrayList<>();
                for (int q = 0; q < n; q++) inputs.add(input(t, e, q, 1));
                for (ReduceOp op : ReduceOp.values()) {
                    Array got = world.allReduce(inputs.get(r), op);
                    expectBytes(got, reduceAll(inputs, op), "all_" + op.name().toLowerCase() + " " + t + " x" + e);
                }
                Array gathered = world.allGather(inputs.get(r));
                expect(gathered.shape(0) == n * e, "all_gather shape " + Arrays.toString(gathered.shape()));
                expectBytes(gathered, concat(t, inputs), "all_gather " + t + " x" + e);

                List<Array> scatterIn = new ArrayList<>();
                for (int q = 0; q < n; q++) scatterIn.add(input(t, n * e, q, 2));
                Array scattered = world.sumScatter(scatterIn.get(r));
                Array full = reduceAll(scatterIn, ReduceOp.SUM);
                Array mine = Array.wrap(full.segment().asSlice((long) r * e * t.itemSize(), (long) e * t.itemSize()), t, e);
                expectBytes(scattered, mine, "sum_scatter " + t + " x" + e);
            }
        }
        // Inputs and outputs nothing else refers to (their memory may be released as soon as the operation is done
        // with it): the results must still be exact, sync and async, across GCs.
        for (int i = 0; i < 200; i++) {
            int e = 1000 + 37 * i;
            Array s = world.allSum(Array.full(DType.FLOAT32, r + 1 + i, e));
            expect(s.getDouble(e - 1) == n * (n + 1) / 2.0 + (double) n * i && s.getDouble(0) == s.getDouble(e - 1),
                    "temporary all_sum #" + i + ": " + s.getDouble(0) + ", " + s.getDouble(e - 1));
            if (i % 10 == 0) {
                Array g = world.allGatherAsync(Array.full(DType.INT64, r * 1000 + i, 3 + i)).get(60, TimeUnit.SECONDS);
                expect(g.getLong((long) (n - 1) * (3 + i)) == (n - 1) * 1000L + i, "temporary async all_gather #" + i);
            }
        }

        // 0-d input and a 2-d gather
        Array scalar = Array.full(DType.FLOAT32, r + 1);
        expect(world.allSum(scalar).getDouble(0) == n * (n + 1) / 2.0, "0-d all_sum");
        expect(Arrays.equals(world.allGather(scalar).shape(), new int[] {n}), "0-d all_gather shape");
        Array twoD = Array.full(DType.INT32, r, 2, 3);
        Array g2 = world.allGather(twoD);
        expect(Arrays.equals(g2.shape(), new int[] {2 * n, 3}) && g2.getLong(3L * 2 * (n - 1)) == n - 1, "2-d all_gather");

        // async variants go through the same per-group queue
        Array a1 = world.allSumAsync(Array.full(DType.FLOAT64, 1.0, 100)).get(60, TimeUnit.SECONDS);
        Array a2 = world.allMaxAsync(Array.full(DType.BFLOAT16, r, 100)).get(60, TimeUnit.SECONDS);
        expect(a1.getDouble(99) == n && a2.getDouble(0) == n - 1, "async all_sum/all_max");

        // heap (non-native) input arrays are staged
        byte[] heap = new byte[16];
        Arrays.fill(heap, (byte) 1);
        Array heapIn = Array.wrap(MemorySegment.ofArray(heap), DType.INT32, 4);
        expect(world.allSum(heapIn).getLong(0) == (long) n * 0x01010101L, "heap input");

        // send/recv between every ordered pair, in one global order (deadlock-free)
        for (int s = 0; s < n; s++) {
            for (int d = 0; d < n; d++) {
                if (s == d) continue;
                for (DType t : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.INT64, DType.BOOL}) {
                    Array payload = input(t, 777, s * 31 + d, 3);
                    if (r == s) world.send(payload, d);
                    if (r == d) expectBytes(world.recvLike(payload, s), payload, "recv " + t + " " + s + "->" + d);
                }
                if (r == s) world.send(Array.zeros(DType.FLOAT32, 0), d);
                if (r == d) expect(world.recv(new int[] {0}, DType.FLOAT32, s).size() == 0, "empty recv");
            }
        }

        // split: colour = parity, key = reverse rank (so new ranks are in descending parent rank)
        try (Group sub = world.split(r % 2, n - r)) {
            List<Integer> members = new ArrayList<>();
            for (int q = n - 1; q >= 0; q--) if (q % 2 == r % 2) members.add(q);
            expect(sub.size() == members.size(), "split size " + sub.size());
            expect(sub.rank() == members.indexOf(r), "split rank " + sub.rank() + " expected " + members.indexOf(r));
            Array s16 = sub.allSum(Array.full(DType.FLOAT16, r, 3));
            double expectSum = members.stream().mapToInt(Integer::intValue).sum();
            expect(s16.getDouble(2) == expectSum, "split all_sum float16 " + s16 + " expected " + expectSum);
            Array order = sub.allGather(Array.of(r));
            for (int i = 0; i < members.size(); i++) expect(order.getLong(i) == members.get(i), "split order " + order);
            if (sub.size() > 1) {
                int peer = (sub.rank() + 1) % sub.size();
                int from = (sub.rank() + sub.size() - 1) % sub.size();
                if (sub.rank() % 2 == 0) {
                    sub.send(Array.of(r), peer);
                    expect(sub.recv(new int[] {1}, DType.INT32, from).getLong(0) == members.get(from), "split recv");
                } else {
                    expect(sub.recv(new int[] {1}, DType.INT32, from).getLong(0) == members.get(from), "split recv");
                    sub.send(Array.of(r), peer);
                }
            }
        }
        try (Group byRank = world.split(0)) {
            expect(byRank.size() == n && byRank.rank() == r, "split(0) keeps parent order");
            expect(byRank.allMin(Array.of((long) r)).getLong(0) == 0, "split(0) all_min");
        }
        try (Group alone = world.split(r)) {
            Array x = Array.ones(DType.FLOAT32, 4);
            expect(alone.size() == 1 && alone.allSum(x) == x, "1-member split returns its input");
        }
        expectThrows(IllegalArgumentException.class, () -> world.split(-1), "negative colour");

        // MPI's own error text: a message longer than the receive buffer (MPI_ERR_TRUNCATE),
        // and a shorter one (jdist's count check); the group stays usable afterwards.
        if (n >= 2 && r < 2) {
            if (r == 0) {
                world.send(Array.fromInts(new int[8], 8), 1);
                world.send(Array.fromInts(new int[2], 2), 1);
            } else {
                DistributedException e = expectThrows(DistributedException.class,
                        () -> world.recv(new int[] {4}, DType.INT32, 0), "truncated recv");
                expect(e.getMessage().contains("MPI_Irecv") && e.getMessage().toLowerCase().contains("trunc"),
                        "MPI error text: " + e.getMessage());
                System.out.println("MPI-CHECK error text: " + e.getMessage());
                DistributedException shortMsg = expectThrows(DistributedException.class,
                        () -> world.recv(new int[] {4}, DType.INT32, 0), "short recv");
                expect(shortMsg.getMessage().contains("held 2"), "count check: " + shortMsg.getMessage());
            }
        }
        expect(world.allSum(Array.of(1)).getLong(0) == n, "group usable after errors");

        // the operations MLX lacks (broadcast, barrier, all_to_all(_v), gather, scatter, batches, any-peer send/recv):
        // every dtype, sizes 0/1/odd/large, roots other than 0, on the world and on a split
        CollectiveChecks.Options full = CollectiveChecks.Options.full(1 << 20);
        List<String> wrong = CollectiveChecks.run(world, full);
        expect(wrong.isEmpty(), "new operations on the world: " + wrong);
        checks++;
        try (Group sub = world.split(r % 2, n - r)) {
            List<String> subWrong = CollectiveChecks.run(sub, CollectiveChecks.SPLIT);
            expect(subWrong.isEmpty(), "new operations on a split: " + subWrong);
            checks++;
        }
        // heap (non-native) arrays into and out of the point-to-point paths (each array staged once, own block kept)
        byte[] heapOutBytes = new byte[4 * n * 3];
        Array heapOut = Array.wrap(MemorySegment.ofArray(heapOutBytes), DType.INT32, n * 3);
        int[] mine = new int[n * 3];
        for (int j = 0; j < n * 3; j++) mine[j] = r * 1000 + j;
        Array heapSrc = Array.wrap(MemorySegment.ofArray(Array.fromInts(mine, n * 3).segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)),
                DType.INT32, n * 3);
        world.allToAllInto(heapSrc, heapOut);
        for (int q = 0; q < n; q++) {
            for (int k = 0; k < 3; k++) {
                expect(heapOut.getLong(q * 3L + k) == q * 1000L + r * 3 + k, "heap all_to_all block from rank " + q + ": " + heapOut);
            }
        }

        System.out.println("MPI-CHECK OK " + tag + " of " + n + " (" + checks + " checks, "
                + MpiRuntime.current().lib + ", thread level " + MpiRuntime.current().providedThreadLevel()
                + ", maxCount " + MpiGroup.maxCount + ")");
        System.out.flush();
        Distributed.reset();  // MPI_Finalize
    }

    /** Rank q's input: integers from random bits, floats small exact values, bool 0/1/2. */
    static Array input(DType t, int e, int q, int salt) {
        Random rnd = new Random(1_000_003L * q + 7919L * t.ordinal() + 31L * e + salt);
        Array a = Array.zeros(t, e);
        for (int i = 0; i < e; i++) {
            switch (t) {
                case BOOL -> a.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(3));
                case FLOAT16, BFLOAT16, FLOAT32, FLOAT64 -> a.setDouble(i, rnd.nextInt(17) - 8 + (rnd.nextBoolean() ? 0.5 : 0));
                case COMPLEX64 -> a.setComplex(i, rnd.nextInt(5) - 2, rnd.nextInt(9) - 4);
                default -> {
                    byte[] b = new byte[t.itemSize()];
                    rnd.nextBytes(b);
                    MemorySegment.copy(MemorySegment.ofArray(b), 0, a.segment(), (long) i * t.itemSize(), b.length);
                }
            }
        }
        return a;
    }

    static Array reduceAll(List<Array> inputs, ReduceOp op) {
        Array acc = inputs.getFirst().copy();
        for (int q = 1; q < inputs.size(); q++) {
            Reducer.reduce(op, acc.dtype(), acc.segment(), 0, inputs.get(q).segment(), 0, acc.size());
        }
        return acc;
    }

    static Array concat(DType t, List<Array> parts) {
        long total = parts.stream().mapToLong(Array::size).sum();
        Array out = Array.zeros(t, Math.toIntExact(total));
        long off = 0;
        for (Array p : parts) {
            MemorySegment.copy(p.segment(), 0, out.segment(), off, p.nbytes());
            off += p.nbytes();
        }
        return out;
    }

    static void expectBytes(Array got, Array want, String what) {
        checks++;
        if (got.dtype() != want.dtype() || !Arrays.equals(got.toBytes(), want.toBytes())) {
            throw new AssertionError(what + ": got " + got + " want " + want);
        }
    }

    static void expect(boolean ok, String what) {
        checks++;
        if (!ok) throw new AssertionError(what);
    }

    static <T extends Throwable> T expectThrows(Class<T> kind, Runnable r, String what) {
        checks++;
        try {
            r.run();
        } catch (Throwable t) {
            if (kind.isInstance(t)) return kind.cast(t);
            throw new AssertionError(what + ": expected " + kind.getSimpleName() + " but got " + t, t);
        }
        throw new AssertionError(what + ": expected " + kind.getSimpleName() + " but nothing was thrown");
    }
}
