package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.reduce.Reducer;
import dev.jdist.spi.GroupImpl;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An in-JVM group for tests: {@code n} {@link Group}s whose ranks are threads of this JVM and whose
 * collectives meet at a barrier. Counts the collectives and bytes each rank issued, so tests can
 * check how many messages an algorithm sends. Sums are taken in rank order 0..n-1 with
 * {@link Reducer} (the same value on every rank).
 */
public final class ThreadGroups {
    private static final long TIMEOUT_S = 30;

    private final int n;
    private final CyclicBarrier barrier;
    private final MemorySegment[] slots;
    private final AtomicLong[] collectives;
    private final AtomicLong[] bytes;
    private final List<Group> groups = new ArrayList<>();
    private final long[][] counts;
    private final java.util.Map<Long, java.util.concurrent.BlockingQueue<MemorySegment>> mailboxes =
            new java.util.concurrent.ConcurrentHashMap<>();

    private ThreadGroups(int n) {
        this.n = n;
        this.barrier = new CyclicBarrier(n);
        this.slots = new MemorySegment[n];
        this.collectives = new AtomicLong[n];
        this.bytes = new AtomicLong[n];
        this.counts = new long[n][];
        for (int r = 0; r < n; r++) {
            collectives[r] = new AtomicLong();
            bytes[r] = new AtomicLong();
            Impl impl = new Impl(r);
            groups.add(new Group(impl, OperationTrace.WORLD));
        }
    }

    /** {@code n >= 2} groups of one world; group r has rank r. */
    public static ThreadGroups of(int n) {
        if (n < 2) throw new IllegalArgumentException("a thread group needs at least 2 ranks; use the singleton for 1");
        return new ThreadGroups(n);
    }

    public Group group(int rank) { return groups.get(rank); }

    public int size() { return n; }

    /** Collectives rank r has issued so far. */
    public long collectives(int rank) { return collectives[rank].get(); }

    /** Payload bytes rank r has contributed to collectives so far. */
    public long bytes(int rank) { return bytes[rank].get(); }

    /** Runs {@code body} on every rank, each on its own thread; returns the results in rank order. */
    public <T> List<T> onEveryRank(java.util.function.Function<Group, T> body) {
        List<java.util.concurrent.CompletableFuture<T>> futures = new ArrayList<>();
        for (Group g : groups) {
            futures.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> body.apply(g),
                    r -> Thread.ofPlatform().daemon().name("rank-" + g.rank()).start(r)));
        }
        List<T> out = new ArrayList<>();
        for (var f : futures) {
            try {
                out.add(f.get(TIMEOUT_S * 2, TimeUnit.SECONDS));
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof RuntimeException re) throw re;
                if (e.getCause() instanceof Error err) throw err;
                throw new IllegalStateException(e.getCause());
            } catch (InterruptedException | TimeoutException e) {
                throw new IllegalStateException("a rank did not finish within " + TIMEOUT_S * 2 + " s", e);
            }
        }
        return out;
    }

    /** Messages from {@code src} to {@code dst}, in order. */
    private java.util.concurrent.BlockingQueue<MemorySegment> mailbox(int src, int dst) {
        return mailboxes.computeIfAbsent((long) src * n + dst, k -> new java.util.concurrent.LinkedBlockingQueue<>());
    }

    private void await() {
        try {
            barrier.await(TIMEOUT_S, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted in a thread-group collective", e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new IllegalStateException("thread-group collective did not complete on all ranks within " + TIMEOUT_S
                    + " s (every rank must issue the same collectives)", e);
        }
    }

    private final class Impl implements GroupImpl {
        private final int rank;

        Impl(int rank) { this.rank = rank; }

        @Override public int rank() { return rank; }
        @Override public int size() { return n; }
        @Override public String backendName() { return "threads"; }

        @Override
        public GroupImpl split(int color, int key) {
            throw new UnsupportedCollectiveException("thread groups do not split");
        }

        @Override
        public void allReduce(Array in, Array out, ReduceOp op) {
            count(in);
            slots[rank] = copy(in.segment());
            await();
            MemorySegment acc = copy(slots[0]);
            for (int q = 1; q < n; q++) Reducer.reduce(op, in.dtype(), acc, 0, slots[q], 0, in.size());
            await();
            MemorySegment.copy(acc, 0, out.segment(), 0, acc.byteSize());
        }

        @Override
        public void allGather(Array in, Array out) {
            count(in);
            slots[rank] = copy(in.segment());
            await();
            for (int q = 0; q < n; q++) MemorySegment.copy(slots[q], 0, out.segment(), q * in.nbytes(), in.nbytes());
            await();
        }

        @Override
        public void sumScatter(Array in, Array out) {
            count(in);
            slots[rank] = copy(in.segment());
            await();
            long chunk = out.nbytes();
            MemorySegment acc = copy(slots[0].asSlice(rank * chunk, chunk));
            for (int q = 1; q < n; q++) Reducer.reduce(ReduceOp.SUM, in.dtype(), acc, 0, slots[q], rank * chunk, out.size());
            await();
            MemorySegment.copy(acc, 0, out.segment(), 0, chunk);
        }

        @Override
        public void send(Array x, int dst) { post(x, dst); }

        @Override
        public void recv(Array out, int src) { take(out, src); }

        @Override
        public void broadcast(Array buffer, int root) {
            count(buffer);
            slots[rank] = copy(buffer.segment());
            await();
            if (rank != root) MemorySegment.copy(slots[root], 0, buffer.segment(), 0, buffer.nbytes());
            await();
        }

        @Override
        public void allToAllV(Array in, long[] sendCounts, Array out, long[] recvCounts) {
            count(in);
            int s = in.dtype().itemSize();
            slots[rank] = copy(in.segment());
            counts[rank] = sendCounts.clone();
            await();
            long at = 0;
            for (int q = 0; q < n; q++) {
                long from = 0;
                for (int j = 0; j < rank; j++) from += counts[q][j];
                if (counts[q][rank] != recvCounts[q]) {
                    throw new IllegalStateException("rank " + q + " sends " + counts[q][rank] + " elements to rank " + rank
                            + ", which expects " + recvCounts[q]);
                }
                MemorySegment.copy(slots[q], from * s, out.segment(), at * s, recvCounts[q] * s);
                at += recvCounts[q];
            }
            await();
        }

        @Override
        public void gather(Array in, Array out, int root) {
            count(in);
            slots[rank] = copy(in.segment());
            await();
            if (rank == root) for (int q = 0; q < n; q++) MemorySegment.copy(slots[q], 0, out.segment(), q * in.nbytes(), in.nbytes());
            await();
        }

        @Override
        public void scatter(Array in, Array out, int root) {
            count(out);
            slots[rank] = in == null ? null : copy(in.segment());
            await();
            MemorySegment.copy(slots[root], rank * out.nbytes(), out.segment(), 0, out.nbytes());
            await();
        }

        @Override
        public void batchSendRecv(java.util.List<PeerOp> ops) {
            for (PeerOp op : ops) if (op.isSend()) post(op.array(), op.peer());
            for (PeerOp op : ops) if (!op.isSend()) take(op.array(), op.peer());
        }

        private void post(Array x, int dst) {
            mailbox(rank, dst).add(copy(x.segment()));
        }

        private void take(Array out, int src) {
            try {
                MemorySegment got = mailbox(src, rank).poll(TIMEOUT_S, TimeUnit.SECONDS);
                if (got == null) throw new IllegalStateException("rank " + rank + ": nothing from rank " + src + " within " + TIMEOUT_S + " s");
                if (got.byteSize() != out.nbytes()) {
                    throw new IllegalStateException("rank " + rank + " expected " + out.nbytes() + " bytes from rank " + src
                            + ", got " + got.byteSize());
                }
                MemorySegment.copy(got, 0, out.segment(), 0, got.byteSize());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() {}

        private void count(Array in) {
            collectives[rank].incrementAndGet();
            bytes[rank].addAndGet(in.nbytes());
        }

        private MemorySegment copy(MemorySegment s) {
            MemorySegment c = MemorySegment.ofArray(new byte[Math.toIntExact(s.byteSize())]);
            MemorySegment.copy(s, 0, c, 0, s.byteSize());
            return c;
        }
    }
}
