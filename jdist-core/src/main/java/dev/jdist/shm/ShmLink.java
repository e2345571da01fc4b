package dev.jdist.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One direction of a channel between two processes on one host in shared memory (the ring's
 * {@code JDIST_TRANSPORT=shm}, and the peer mesh between ranks that share a host): a
 * single-producer single-consumer byte ring. One process writes, the other
 * reads; each side builds its own {@code ShmLink} over the same mapped region and uses only its half
 * of the methods.
 *
 * <p>Region layout: {@code head} (bytes ever published by the producer) at {@value #HEAD},
 * {@code tail} (bytes ever released by the consumer) at {@value #TAIL} — on separate cache-line
 * pairs, so the two sides never write the same line — and the data at {@value #DATA}, a power of
 * two {@code capacity} bytes. Byte {@code p} of the stream lives at data offset
 * {@code p & (capacity - 1)}. The producer copies data in, then publishes {@code head} with a
 * release store; the consumer reads {@code head} with an acquire load, uses the bytes in place (the
 * shared-memory transport reduces straight out of them), then publishes {@code tail} with a release store, which
 * the producer reads with an acquire load before it reuses the space. Each side caches the other's
 * counter and re-reads it only when the cached value does not allow what it wants to do.
 *
 * <p>Sleeping: a side that has waited a while sets its flag ({@code consumerSleeping} at
 * {@value #CONSUMER_SLEEPING}, {@code producerSleeping} at {@value #PRODUCER_SLEEPING}) with a volatile
 * store, re-checks the ring, and sleeps until a doorbell byte arrives on the ring connection. The
 * other side publishes {@code head}/{@code tail} with a volatile store and then looks at the flag
 * ({@link #claimSleepingConsumer()}, {@link #claimSleepingProducer()}): with a full fence on both
 * sides, either the sleeper sees the new counter or the publisher sees the flag and rings.
 */
public final class ShmLink {
    public static final long HEAD = 0;
    public static final long TAIL = 128;
    public static final long CONSUMER_SLEEPING = 256;
    public static final long PRODUCER_SLEEPING = 384;
    public static final long DATA = 4096;
    /** Positions are rounded up to this at the start of an operation, so no element straddles the wrap. */
    public static final long ALIGN = 64;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment region;
    private final MemorySegment data;
    private final long capacity;
    private final long mask;
    // producer side
    private long head;
    private long cachedTail;
    // consumer side
    private long tail;
    private long cachedHead;

    /** Bytes of shared memory one link of {@code capacity} data bytes takes. */
    public static long regionBytes(long capacity) { return DATA + capacity; }

    /**
     * @param region   the link's region ({@link #regionBytes} long, 8-byte aligned), counters zero or
     *                 as left by earlier users of the same link
     * @param capacity a power of two, at least {@link #ALIGN}
     */
    public ShmLink(MemorySegment region, long capacity) {
        if (capacity < ALIGN || Long.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("link capacity must be a power of two >= " + ALIGN + ", got " + capacity);
        }
        if (region.byteSize() < regionBytes(capacity)) {
            throw new IllegalArgumentException("link region of " + region.byteSize() + " bytes is too small for capacity " + capacity);
        }
        this.region = region;
        this.data = region.asSlice(DATA, capacity);
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.head = (long) LONG.getAcquire(region, HEAD);
        this.tail = (long) LONG.getAcquire(region, TAIL);
        this.cachedTail = tail;
        this.cachedHead = head;
    }

    public long capacity() { return capacity; }

    // ------------------------------------------------------------------ producer

    /**
     * Producer, at the start of an operation that sends bytes on this link: skips to the next
     * {@link #ALIGN}ed position. The consumer does the same in {@link #alignConsumer()} at the start of
     * the same operation (both sides agree because every operation moves the same byte count on a
     * link on both sides, and only operations that move bytes align).
     */
    public void alignProducer() { head = (head + ALIGN - 1) & -ALIGN; }

    /** Producer: bytes that may be written now (at least {@code want} if the cached tail allows, else re-read). */
    public long writable(long want) {
        long free = capacity - (head - cachedTail);
        if (free < want) {
            cachedTail = (long) LONG.getAcquire(region, TAIL);
            free = capacity - (head - cachedTail);
        }
        return Math.max(0, free);
    }

    /** Producer: copies {@code n <= writable()} bytes from {@code src} into the ring and publishes them. */
    public void write(MemorySegment src, long srcOffset, long n) {
        long p = head & mask;
        long first = Math.min(n, capacity - p);
        MemorySegment.copy(src, srcOffset, data, p, first);
        if (first < n) MemorySegment.copy(src, srcOffset + first, data, 0, n - first);
        head += n;
        LONG.setVolatile(region, HEAD, head);   // volatile, not just release: ordered before the flag check
    }

    /** Producer, after {@link #write}: true (once) when the consumer is asleep and must be rung. */
    public boolean claimSleepingConsumer() {
        return (long) LONG.getVolatile(region, CONSUMER_SLEEPING) != 0
                && LONG.compareAndSet(region, CONSUMER_SLEEPING, 1L, 0L);
    }

    /** Producer, before sleeping for space: raises its flag; then re-check {@link #writable}. */
    public void producerSleeps(boolean sleeping) { LONG.setVolatile(region, PRODUCER_SLEEPING, sleeping ? 1L : 0L); }

    /** Producer: bytes written but not yet released by the consumer (as far as this side knows). */
    public long unconsumed() {
        cachedTail = (long) LONG.getAcquire(region, TAIL);
        return Math.max(0, head - cachedTail);
    }

    // ------------------------------------------------------------------ consumer

    /** Consumer, at the start of an operation that receives bytes on this link; see {@link #alignProducer()}. */
    public void alignConsumer() { tail = (tail + ALIGN - 1) & -ALIGN; }

    /** Consumer: bytes published and not yet released (re-reads {@code head} when fewer than {@code want} are known). */
    public long readable(long want) {
        long avail = cachedHead - tail;
        if (avail < want) {
            cachedHead = (long) LONG.getAcquire(region, HEAD);
            avail = cachedHead - tail;
        }
        return Math.max(0, avail);
    }

    /** Consumer: the data region; the next unread byte is at {@link #readOffset()}. */
    public MemorySegment data() { return data; }

    /** Consumer: data offset of the next unread byte. */
    public long readOffset() { return tail & mask; }

    /** Consumer: unread bytes that lie contiguously from {@link #readOffset()} before the wrap (if published). */
    public long contiguous() { return capacity - (tail & mask); }

    /** Consumer: marks {@code n} bytes as used, giving their space back to the producer. */
    public void release(long n) {
        tail += n;
        LONG.setVolatile(region, TAIL, tail);   // volatile, not just release: ordered before the flag check
    }

    /** Consumer, after {@link #release}: true (once) when the producer is asleep and must be rung. */
    public boolean claimSleepingProducer() {
        return (long) LONG.getVolatile(region, PRODUCER_SLEEPING) != 0
                && LONG.compareAndSet(region, PRODUCER_SLEEPING, 1L, 0L);
    }

    /** Consumer, before sleeping for data: raises its flag; then re-check {@link #readable}. */
    public void consumerSleeps(boolean sleeping) { LONG.setVolatile(region, CONSUMER_SLEEPING, sleeping ? 1L : 0L); }

    /** Consumer: copies {@code n <= readable()} bytes out (handling the wrap) and releases them. */
    public void read(MemorySegment dst, long dstOffset, long n) {
        long p = tail & mask;
        long first = Math.min(n, capacity - p);
        MemorySegment.copy(data, p, dst, dstOffset, first);
        if (first < n) MemorySegment.copy(data, 0, dst, dstOffset + first, n - first);
        release(n);
    }
}
