package dev.jdist.shm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The shared-memory SPSC byte ring on its own: wrap-around, odd sizes, alignment, two threads. */
@Timeout(60)
class ShmLinkTest {

    private static MemorySegment pattern(Arena a, long n, int seed) {
        MemorySegment s = a.allocate(Math.max(1, n), 8).asSlice(0, n);
        for (long i = 0; i < n; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        return s;
    }

    @Test
    void bytesComeOutInOrderAcrossManyWraps() {
        try (Arena a = Arena.ofConfined()) {
            long cap = 4096;
            MemorySegment region = a.allocate(ShmLink.regionBytes(cap), 4096);
            ShmLink producer = new ShmLink(region, cap);
            ShmLink consumer = new ShmLink(region, cap);
            long total = 10 * cap + 123;   // not a multiple of the capacity or of the chunk
            MemorySegment src = pattern(a, total, 7);
            MemorySegment dst = a.allocate(total);
            long written = 0;
            long read = 0;
            Random rnd = new Random(42);
            while (read < total) {
                long want = Math.min(total - written, 1 + rnd.nextInt(3000));   // chunks that do not divide cap
                long w = Math.min(want, producer.writable(want));
                if (w > 0) {
                    producer.write(src, written, w);
                    written += w;
                }
                long avail = consumer.readable(1);
                long r = Math.min(avail, 1 + rnd.nextInt(2500));
                if (r > 0) {
                    consumer.read(dst, read, r);
                    read += r;
                }
                assertThat(written - read).isBetween(0L, cap);
            }
            assertThat(dst.mismatch(src)).isEqualTo(-1);
        }
    }

    @Test
    void theProducerNeverOverwritesUnreadBytes() {
        try (Arena a = Arena.ofConfined()) {
            long cap = 4096;
            MemorySegment region = a.allocate(ShmLink.regionBytes(cap), 4096);
            ShmLink producer = new ShmLink(region, cap);
            ShmLink consumer = new ShmLink(region, cap);
            assertThat(producer.writable(cap)).isEqualTo(cap);
            producer.write(pattern(a, cap - 100, 1), 0, cap - 100);
            assertThat(producer.writable(cap)).isEqualTo(100);
            assertThat(consumer.readable(1)).isEqualTo(cap - 100);
            assertThat(consumer.contiguous()).isEqualTo(cap);
            consumer.release(1000);
            assertThat(producer.writable(1)).isEqualTo(100);   // cached: enough for what was asked
            assertThat(producer.writable(cap)).isEqualTo(1100);   // re-reads the tail
            producer.write(pattern(a, 1100, 2), 0, 1100);       // wraps
            assertThat(producer.writable(1)).isZero();
            assertThat(consumer.readable(cap)).isEqualTo(cap);
            assertThat(consumer.contiguous()).isEqualTo(cap - 1000);
            assertThat(producer.unconsumed()).isEqualTo(cap);
        }
    }

    @Test
    void alignmentKeepsBothSidesInStepAndElementsWhole() {
        try (Arena a = Arena.ofConfined()) {
            long cap = 4096;
            MemorySegment region = a.allocate(ShmLink.regionBytes(cap), 4096);
            ShmLink producer = new ShmLink(region, cap);
            ShmLink consumer = new ShmLink(region, cap);
            // operation 1: 3 bytes (e.g. an all_gather of 3 bytes)
            producer.alignProducer();
            producer.write(pattern(a, 3, 5), 0, 3);
            // operation 2 starts on the producer before the consumer finished operation 1
            producer.alignProducer();
            MemorySegment two = pattern(a, 64, 9);
            producer.write(two, 0, 64);
            consumer.alignConsumer();
            MemorySegment got1 = a.allocate(3);
            assertThat(consumer.readable(3)).isGreaterThanOrEqualTo(3);
            consumer.read(got1, 0, 3);
            assertThat(got1.mismatch(pattern(a, 3, 5))).isEqualTo(-1);
            consumer.alignConsumer();
            assertThat(consumer.readOffset() % ShmLink.ALIGN).isZero();
            assertThat(consumer.readable(64)).isEqualTo(64);
            MemorySegment got2 = a.allocate(64);
            consumer.read(got2, 0, 64);
            assertThat(got2.mismatch(two)).isEqualTo(-1);
        }
    }

    @Test
    void badCapacitiesAreRejected() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment region = a.allocate(ShmLink.regionBytes(8192), 4096);
            assertThatThrownBy(() -> new ShmLink(region, 3000)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> new ShmLink(region, 16384)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @ParameterizedTest(name = "capacity {0}, chunks up to {1}, {2} bytes")
    @CsvSource({"4096,1,100000", "4096,777,3000001", "65536,65536,20000003", "65536,100000,7777777"})
    void aProducerAndAConsumerThreadMoveEveryByte(long cap, int maxChunk, long total) throws Exception {
        try (Arena a = Arena.ofShared()) {
            MemorySegment region = a.allocate(ShmLink.regionBytes(cap), 4096);
            MemorySegment src = pattern(a, total, 3);
            MemorySegment dst = a.allocate(total);
            ShmLink producer = new ShmLink(region, cap);
            ShmLink consumer = new ShmLink(region, cap);
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
                Future<?> p = pool.submit(() -> {
                    Random rnd = new Random(1);
                    long done = 0;
                    while (done < total) {
                        if (System.nanoTime() > deadline) throw new AssertionError("producer stuck at " + done);
                        long want = Math.min(total - done, 1 + rnd.nextInt(maxChunk));
                        long w = Math.min(want, producer.writable(want));
                        if (w == 0) {
                            Thread.onSpinWait();
                            continue;
                        }
                        producer.write(src, done, w);
                        done += w;
                    }
                    return null;
                });
                Future<?> c = pool.submit(() -> {
                    Random rnd = new Random(2);
                    long done = 0;
                    while (done < total) {
                        if (System.nanoTime() > deadline) throw new AssertionError("consumer stuck at " + done);
                        long avail = consumer.readable(1);
                        if (avail == 0) {
                            Thread.onSpinWait();
                            continue;
                        }
                        long n = Math.min(avail, 1 + rnd.nextInt(maxChunk));
                        if (rnd.nextBoolean()) {
                            consumer.read(dst, done, n);
                        } else {
                            // in place, as the transport reduces: up to the wrap, then release
                            n = Math.min(n, consumer.contiguous());
                            MemorySegment.copy(consumer.data(), consumer.readOffset(), dst, done, n);
                            consumer.release(n);
                        }
                        done += n;
                    }
                    return null;
                });
                p.get(50, TimeUnit.SECONDS);
                c.get(50, TimeUnit.SECONDS);
            } finally {
                pool.shutdownNow();
                assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(dst.mismatch(src)).isEqualTo(-1);
        }
    }
}
