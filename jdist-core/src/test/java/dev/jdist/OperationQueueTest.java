package dev.jdist;

import dev.jdist.flight.OperationTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OperationQueueTest {

    private final OperationQueue queue = new OperationQueue("test", new OperationTrace(OperationTrace.WORLD, "test", 0, 2));
    private final List<String> order = Collections.synchronizedList(new ArrayList<>());

    /** An operation as the queue sees it; what it is does not matter to the ordering tested here. */
    private static <T> T run(OperationQueue q, java.util.function.Supplier<T> op) {
        return q.run(OperationTrace.Kind.ALL_SUM, DType.FLOAT32, new int[] {1}, 4, -1, op);
    }

    private static <T> CompletableFuture<T> submit(OperationQueue q, java.util.function.Supplier<T> op) {
        return q.submit(OperationTrace.Kind.ALL_SUM, DType.FLOAT32, new int[] {1}, 4, -1, op);
    }

    @Test
    void aSynchronousOperationRunsOnTheCallersThread() {
        Thread caller = Thread.currentThread();
        assertThat(run(queue, Thread::currentThread)).isSameAs(caller);
    }

    @Test
    void asyncThenSyncFromOneThreadRunInIssueOrder() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> a = submit(queue, () -> {
            await(release);
            order.add("A");
            return "a";
        });
        CompletableFuture<String> b = submit(queue, () -> { order.add("B"); return "b"; });
        Thread releaser = Thread.ofPlatform().start(() -> {
            sleep(100);
            release.countDown();
        });
        String c = run(queue, () -> { order.add("C"); return "c"; });   // must wait for A and B
        assertThat(c).isEqualTo("c");
        assertThat(a.get(10, TimeUnit.SECONDS)).isEqualTo("a");
        assertThat(b.get(10, TimeUnit.SECONDS)).isEqualTo("b");
        assertThat(order).containsExactly("A", "B", "C");
        releaser.join(10_000);
    }

    @Test
    void aSyncCallFromAnotherThreadWaitsForEverythingIssuedBeforeIt() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        submit(queue, () -> { await(release); order.add("A"); return null; });
        CompletableFuture<Void> other = CompletableFuture.runAsync(() -> run(queue, () -> order.add("B")));
        // B cannot overtake A however long we wait; release A once B's thread is certainly blocked or done.
        sleep(100);
        assertThat(order).isEmpty();
        release.countDown();
        other.get(10, TimeUnit.SECONDS);
        assertThat(order).containsExactly("A", "B");
    }

    @Test
    void concurrentIssuersNeverOverlapAndEachThreadsOpsKeepItsOrder() throws Exception {
        int threads = 6, perThread = 150;
        AtomicInteger active = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<int[]> executed = Collections.synchronizedList(new ArrayList<>());
        List<Thread> issuers = new ArrayList<>();
        List<CompletableFuture<?>> futures = Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < threads; t++) {
            int thread = t;
            issuers.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < perThread; i++) {
                    int seq = i;
                    java.util.function.Supplier<Object> op = () -> {
                        if (active.incrementAndGet() != 1) overlaps.incrementAndGet();
                        executed.add(new int[] {thread, seq});
                        active.decrementAndGet();
                        return null;
                    };
                    if (i % 3 == 0) run(queue, op);
                    else futures.add(submit(queue, op));
                }
            }));
        }
        for (Thread t : issuers) t.join(30_000);
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        assertThat(overlaps.get()).isZero();
        assertThat(executed).hasSize(threads * perThread);
        int[] next = new int[threads];
        for (int[] e : executed) {
            assertThat(e[1]).as("thread %d's operations out of order", e[0]).isEqualTo(next[e[0]]);
            next[e[0]]++;
        }
    }

    @Test
    void aFailedOperationDoesNotBlockLaterOnes() throws Exception {
        assertThatThrownBy(() -> run(queue, () -> { throw new PeerLostException("rank 1 gone"); }))
                .isInstanceOf(PeerLostException.class).hasMessage("rank 1 gone");
        CompletableFuture<Object> failed = submit(queue, () -> { throw new IllegalStateException("boom"); });
        CompletableFuture<String> after = submit(queue, () -> "after");
        assertThat(run(queue, () -> "sync after")).isEqualTo("sync after");
        assertThat(after.get(10, TimeUnit.SECONDS)).isEqualTo("after");
        // completed on the callback pool: wait for it rather than race it
        assertThat(failed).failsWithin(java.time.Duration.ofSeconds(10));
    }

    @Test
    void aCallbackThatIssuesAnotherOperationDoesNotDeadlock() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> first = submit(queue, () -> { await(release); return "1"; });
        CompletableFuture<String> chained = first.thenApply(v -> run(queue, () -> v + "+3"));
        CompletableFuture<String> second = submit(queue, () -> "2");
        release.countDown();
        assertThat(chained.get(10, TimeUnit.SECONDS)).isEqualTo("1+3");
        assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo("2");
    }

    @Test
    void anOperationIssuedFromInsideAnotherFailsInsteadOfWaitingForItself() {
        assertThatThrownBy(() -> run(queue, () -> run(queue, () -> 1)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("inside another operation");
        assertThat(run(queue, () -> 2)).isEqualTo(2);
    }

    @Test
    void interruptsWhileWaitingKeepTheOrderAndTheFlag() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        submit(queue, () -> { await(release); order.add("A"); return null; });
        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread waiter = Thread.ofPlatform().start(() -> {
            run(queue, () -> order.add("B"));
            interrupted.complete(Thread.currentThread().isInterrupted());
        });
        sleep(50);
        waiter.interrupt();
        sleep(50);
        release.countDown();
        assertThat(interrupted.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat(order).containsExactly("A", "B");
    }

    @Test
    void aClosedQueueRejectsNewOperations() {
        queue.close();
        assertThatThrownBy(() -> run(queue, () -> 1)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> submit(queue, () -> 1)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @Test
    void closeLetsTheRunningOperationFinishAndFailsThoseNotStarted() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger ranAfterClose = new AtomicInteger();
        CompletableFuture<String> running = submit(queue, () -> {
            started.countDown();
            await(release);
            return "done";
        });
        CompletableFuture<String> queued = submit(queue, () -> { ranAfterClose.incrementAndGet(); return "never"; });
        await(started);
        Thread releaser = Thread.ofPlatform().start(() -> {
            sleep(200);
            release.countDown();
        });
        queue.close();
        queue.awaitFinished();   // returns only once the running operation has finished
        assertThat(running.get(10, TimeUnit.SECONDS)).isEqualTo("done");
        assertThat(queued).failsWithin(java.time.Duration.ofSeconds(10))
                .withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .withMessageContaining("closed before this all_sum");
        assertThat(ranAfterClose).hasValue(0);
        releaser.join(10_000);
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(20, TimeUnit.SECONDS)) throw new IllegalStateException("latch never released");
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
