package dev.jdist.memory;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The caching allocator behind {@link Array}: size classes, reuse, zero fill, bound, configuration, threads. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public class ArrayMemoryTest {

    static final long MiB = 1L << 20;

    /** A cache with no GC nudge (budget never reached) so tests decide when the GC runs. */
    static ArrayMemory cache(long bound) {
        return new ArrayMemory(bound, Long.MAX_VALUE, MiB, true);
    }

    /** Runs the GC until {@code done} holds (bounded: 20 s). */
    public static void gcUntil(BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for " + what);
            System.gc();
            Thread.sleep(10);
        }
    }

    static boolean allBytesAre(MemorySegment s, byte b) {
        for (long i = 0; i < s.byteSize(); i++) if (s.get(ValueLayout.JAVA_BYTE, i) != b) return false;
        return true;
    }

    // ---------------------------------------------------------------- size classes

    @Test
    void sizeClassesWasteAtMostOneEighthAndHaveEightClassesPerOctave() {
        Random rnd = new Random(42);
        List<Long> sizes = new ArrayList<>();
        for (int p = 20; p < 40; p++) {
            long two = 1L << p;
            sizes.addAll(List.of(two - 1, two, two + 1, two + (two >> 3), two + (two >> 3) + 1, 2 * two - 1));
        }
        for (int i = 0; i < 10_000; i++) sizes.add(MiB + (long) (rnd.nextDouble() * (64L << 30)));
        for (long b : sizes) {
            long c = ArrayMemory.sizeClass(b);
            assertThat(c).as("class of %d", b).isGreaterThanOrEqualTo(b);
            assertThat((c - b) * 8).as("waste of %d -> %d", b, c).isLessThanOrEqualTo(b);
            assertThat(ArrayMemory.sizeClass(c)).as("a class is its own class").isEqualTo(c);
        }
        assertThat(ArrayMemory.sizeClass(64 * MiB)).isEqualTo(64 * MiB);
        assertThat(ArrayMemory.sizeClass(64 * MiB + 1)).isEqualTo(72 * MiB);
        TreeMap<Long, Long> classes = new TreeMap<>();
        for (long b = 4 * MiB; b < 8 * MiB; b += 4096) classes.put(ArrayMemory.sizeClass(b), b);
        assertThat(classes.keySet()).containsExactly(4 * MiB, 9 * MiB / 2, 5 * MiB, 11 * MiB / 2, 6 * MiB,
                13 * MiB / 2, 7 * MiB, 15 * MiB / 2, 8 * MiB);
    }

    // ---------------------------------------------------------------- reuse and zero fill

    @Test
    void aBlockIsReusedOnlyAfterItsArrayIsUnreachableAndZerosComesBackZeroFilled() throws Exception {
        ArrayMemory m = cache(64 * MiB);
        MemorySegment s = m.allocate(3 * MiB, true);
        assertThat(allBytesAre(s, (byte) 0)).isTrue();
        long address = s.address();
        s.fill((byte) 0x5A);
        s = null;
        gcUntil(() -> m.stats().cachedBlocks() == 1, "the block to come back");
        assertThat(m.stats().outstandingBytes()).isZero();
        assertThat(m.stats().cachedBytes()).isEqualTo(3 * MiB);

        MemorySegment again = m.allocate(3 * MiB - 100, true);          // same class
        assertThat(again.address()).isEqualTo(address);
        assertThat(again.byteSize()).isEqualTo(3 * MiB - 100);
        assertThat(allBytesAre(again, (byte) 0)).as("zeros from a dirty block").isTrue();
        assertThat(m.stats().hits()).isEqualTo(1);
        assertThat(m.stats().cachedBlocks()).isZero();
        Reference.reachabilityFence(again);
    }

    @Test
    void aSliceKeepsTheBlockOutOfTheCache() throws Exception {
        ArrayMemory m = cache(64 * MiB);
        MemorySegment s = m.allocate(2 * MiB, true);
        MemorySegment slice = s.asSlice(MiB, 16);
        var buffer = s.asSlice(0, 64).asByteBuffer();
        s = null;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertThat(m.stats().cachedBlocks()).as("slice and byte buffer still reachable").isZero();
        slice.fill((byte) 1);                                             // still usable
        buffer.put(0, (byte) 2);
        Reference.reachabilityFence(slice);
        Reference.reachabilityFence(buffer);
        slice = null;
        buffer = null;
        gcUntil(() -> m.stats().cachedBlocks() == 1, "the block to come back after the slice is gone");
    }

    @Test
    void uninitializedSkipsTheFillAndSmallArraysBypassTheCache() throws Exception {
        ArrayMemory m = cache(64 * MiB);
        MemorySegment s = m.allocate(2 * MiB, false);
        s.fill((byte) 7);
        s = null;
        gcUntil(() -> m.stats().cachedBlocks() == 1, "the block to come back");
        MemorySegment dirty = m.allocate(2 * MiB, false);
        assertThat(m.stats().hits()).isEqualTo(1);
        assertThat(dirty.get(ValueLayout.JAVA_BYTE, 12345)).as("not filled").isEqualTo((byte) 7);

        MemorySegment small = m.allocate(MiB - 1, false);
        assertThat(allBytesAre(small, (byte) 0)).isTrue();
        assertThat(m.stats().misses()).isEqualTo(1);                      // only the first 2 MiB block
        assertThat(small.address() % ArrayMemory.ALIGNMENT).isZero();
        assertThat(dirty.address() % ArrayMemory.ALIGNMENT).isZero();
        Reference.reachabilityFence(dirty);
    }

    @Test
    void largeArraysFromTheFactoriesAreCorrectOverDirtyCachedBlocks() throws Exception {
        ArrayMemory shared = ArrayMemory.shared();
        int n = 1 << 19;                                                  // 2 MiB of float32
        long hitsBefore = shared.stats().hits();
        for (int round = 0; round < 3; round++) {
            long outstanding = shared.stats().outstandingBytes();
            List<Array> dirty = new ArrayList<>();
            for (int i = 0; i < 4; i++) dirty.add(Array.full(DType.FLOAT32, Float.NaN, n));
            dirty = null;
            // back from the GC (cached, or cached after evicting older blocks when earlier tests filled the shared cache
            // to its bound: counting cached blocks would then wait forever)
            if (shared.caching()) gcUntil(() -> shared.stats().outstandingBytes() <= outstanding, "the dirty blocks to come back");

            // (plain loops and Arrays.equals: AssertJ's element-wise assertions are slow on 2 MiB)
            assertThat(allBytesAre(Array.zeros(DType.FLOAT32, n).segment(), (byte) 0)).isTrue();
            assertThat(allBytesAre(Array.zeros(DType.INT8, 4 * n).segment(), (byte) 0)).isTrue();
            float[] ones = new float[n];
            java.util.Arrays.fill(ones, 1f);
            assertThat(java.util.Arrays.equals(Array.ones(DType.FLOAT32, n).toFloatArray(), ones)).isTrue();
            float[] v = new float[n];
            for (int i = 0; i < n; i++) v[i] = i;
            Array a = Array.fromFloats(v, n);
            assertThat(java.util.Arrays.equals(a.toFloatArray(), v)).isTrue();
            assertThat(Array.arrayEquals(a.copy(), a)).isTrue();
            assertThat(a.astype(DType.INT32).toIntArray()[n - 1]).isEqualTo(n - 1);
            assertThat(Array.arange(DType.INT32, n).toIntArray()[n - 1]).isEqualTo(n - 1);
        }
        if (shared.caching()) assertThat(shared.stats().hits()).isGreaterThan(hitsBefore);
    }

    // ---------------------------------------------------------------- bound and eviction

    @Test
    void returnsBeyondTheBoundFreeTheOldestBlocks() throws Exception {
        ArrayMemory m = cache(5 * MiB);
        MemorySegment a = m.allocate(2 * MiB, true), b = m.allocate(2 * MiB, true), c = m.allocate(2 * MiB, true);
        long addressB = b.address(), addressC = c.address();
        a = null;
        gcUntil(() -> m.stats().cachedBlocks() == 1, "a back");
        b = null;
        gcUntil(() -> m.stats().cachedBlocks() == 2, "b back");
        c = null;
        gcUntil(() -> m.stats().evictions() == 1, "a evicted when c came back");
        assertThat(m.stats().cachedBlocks()).isEqualTo(2);
        assertThat(m.stats().cachedBytes()).isEqualTo(4 * MiB);
        MemorySegment x = m.allocate(2 * MiB, true), y = m.allocate(2 * MiB, true);
        assertThat(x.address()).as("most recently returned first").isEqualTo(addressC);
        assertThat(y.address()).isEqualTo(addressB);
        assertThat(m.stats().hits()).isEqualTo(2);
        Reference.reachabilityFence(x);
        Reference.reachabilityFence(y);
    }

    @Test
    void aBlockLargerThanTheBoundIsFreedAtOnce() throws Exception {
        ArrayMemory m = cache(3 * MiB);
        MemorySegment s = m.allocate(4 * MiB, true);
        s = null;
        gcUntil(() -> m.stats().evictions() == 1, "the block to be freed");
        assertThat(m.stats().cachedBlocks()).isZero();
        assertThat(m.stats().outstandingBytes()).isZero();
    }

    @Test
    void trimFreesEveryCachedBlock() throws Exception {
        ArrayMemory m = cache(64 * MiB);
        MemorySegment a = m.allocate(2 * MiB, true), b = m.allocate(4 * MiB, true);
        a = null;
        b = null;
        gcUntil(() -> m.stats().cachedBlocks() == 2, "both back");
        m.trim();
        assertThat(m.stats().cachedBytes()).isZero();
        assertThat(m.stats().cachedBlocks()).isZero();
        assertThat(m.allocate(2 * MiB, true).byteSize()).isEqualTo(2 * MiB);
        assertThat(m.stats().misses()).isEqualTo(3);
    }

    @Test
    void aZeroBoundOrNoNativeAccessTurnsTheCacheOff() {
        for (ArrayMemory m : List.of(new ArrayMemory(0, 1, MiB, true), new ArrayMemory(64 * MiB, 1, MiB, false))) {
            assertThat(m.caching()).isFalse();
            MemorySegment s = m.allocate(4 * MiB, true);
            assertThat(s.byteSize()).isEqualTo(4 * MiB);
            assertThat(allBytesAre(s.asSlice(4 * MiB - 4096), (byte) 0)).isTrue();
            assertThat(m.stats()).isEqualTo(new ArrayMemory.Stats(0, 0, 0, 0, 0, 0, 0));
        }
    }

    // ---------------------------------------------------------------- GC nudge

    @Test
    void aMissWithTheBudgetOutstandingNudgesTheGcAndThenReusesBlocks() throws Exception {
        ArrayMemory m = new ArrayMemory(64 * MiB, 8 * MiB, MiB, true);
        List<MemorySegment> held = new ArrayList<>();
        for (int i = 0; i < 2; i++) held.add(m.allocate(4 * MiB, false)); // 8 MiB out, 8 MiB since the last nudge
        assertThat(m.stats().nudges()).isZero();
        held.add(m.allocate(4 * MiB, false));                               // a miss with the budget out: nudge
        assertThat(m.stats().misses()).isEqualTo(3);                       // nothing came back: all held
        assertThat(m.stats().nudges()).isEqualTo(1);
        held = null;
        // now drop every array at once, as a loop `y = g.allSum(x)` does: the nudges bring blocks back
        for (int i = 0; i < 500 && m.stats().hits() == 0; i++) {
            MemorySegment y = m.allocate(4 * MiB, false);
            y.set(ValueLayout.JAVA_INT, 0, i);
        }
        assertThat(m.stats().hits()).as("blocks reused after a nudge").isPositive();
    }

    // ---------------------------------------------------------------- configuration

    @ParameterizedTest
    @ValueSource(strings = {"0", "1073741824", "1GiB", "1 gib", "512MiB", "64KiB", "3TiB", "100B", " 7 "})
    void validCacheBounds(String value) {
        long expected = switch (value.strip().toLowerCase()) {
            case "0" -> 0;
            case "1073741824", "1gib", "1 gib" -> 1L << 30;
            case "512mib" -> 512L << 20;
            case "64kib" -> 64L << 10;
            case "3tib" -> 3L << 40;
            case "100b" -> 100;
            case "7" -> 7;
            default -> throw new AssertionError(value);
        };
        assertThat(ArrayMemory.parseCacheBytes(value)).isEqualTo(expected);
    }

    @Test
    void unsetOrBlankMeansTheDefault() {
        assertThat(ArrayMemory.parseCacheBytes(null)).isEqualTo(ArrayMemory.DEFAULT_CACHE_BYTES).isEqualTo(1L << 30);
        assertThat(ArrayMemory.parseCacheBytes("  ")).isEqualTo(ArrayMemory.DEFAULT_CACHE_BYTES);
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "abc", "1.5GiB", "1GB", "1 G", "0x10", "99999999999999999999", "9999999999TiB", "1e9"})
    void invalidCacheBoundsNameTheVariableTheValueAndTheFix(String value) {
        assertThatThrownBy(() -> ArrayMemory.parseCacheBytes(value))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_ARRAY_CACHE_BYTES='" + value + "'")
                .hasMessageContaining("1GiB")
                .hasMessageContaining("0 turns the array cache off");
    }

    // ---------------------------------------------------------------- threads

    @Test
    void threadsAllocatingAndDroppingNeverShareLiveMemory() throws Exception {
        // a small cache with a small GC budget, so blocks circulate between threads through the cleaner
        ArrayMemory m = new ArrayMemory(8 * MiB, 4 * MiB, 64 << 10, true);
        Set<String> overlaps = java.util.concurrent.ConcurrentHashMap.newKeySet();
        TreeMap<Long, Long> live = new TreeMap<>();                        // address -> end, guarded by itself
        java.util.concurrent.atomic.AtomicLong large = new java.util.concurrent.atomic.AtomicLong();
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                results.add(pool.submit(() -> {
                    Random rnd = new Random(id);
                    List<MemorySegment> window = new ArrayList<>();
                    List<Byte> patterns = new ArrayList<>();
                    for (int i = 0; i < 300; i++) {
                        long bytes = (64L << 10) * (1 + rnd.nextInt(8)) - rnd.nextInt(1000);
                        boolean zeroed = rnd.nextBoolean();
                        if (bytes >= (64L << 10)) large.incrementAndGet();
                        MemorySegment s = m.allocate(bytes, zeroed);
                        synchronized (live) {
                            var below = live.floorEntry(s.address() + bytes - 1);
                            if (below != null && below.getValue() > s.address()) {
                                overlaps.add("thread " + id + " got [" + s.address() + ", +" + bytes + ") overlapping a live array");
                            }
                            live.put(s.address(), s.address() + bytes);
                        }
                        if (zeroed && !allBytesAre(s.asSlice(0, Math.min(bytes, 4096)), (byte) 0)) {
                            return "thread " + id + " iteration " + i + ": zeros() not zero";
                        }
                        byte p = (byte) (id * 64 + i);
                        s.fill(p);
                        window.add(s);
                        patterns.add(p);
                        for (int w = 0; w < window.size(); w++) {
                            MemorySegment x = window.get(w);
                            for (long o = 0; o < x.byteSize(); o += 509) {
                                if (x.get(ValueLayout.JAVA_BYTE, o) != patterns.get(w)) {
                                    return "thread " + id + " iteration " + i + ": a live array was overwritten at " + o;
                                }
                            }
                        }
                        if (window.size() > 3 || rnd.nextInt(4) == 0) {
                            int drop = rnd.nextInt(window.size());
                            MemorySegment gone = window.remove(drop);
                            patterns.remove(drop);
                            synchronized (live) {
                                live.remove(gone.address());
                            }
                        }
                    }
                    synchronized (live) {
                        for (MemorySegment x : window) live.remove(x.address());
                    }
                    return "";
                }));
            }
            List<String> failures = new ArrayList<>();
            for (Future<String> f : results) failures.add(f.get(100, TimeUnit.SECONDS));
            assertThat(String.join("", failures)).isEmpty();
            assertThat(overlaps).isEmpty();
        } finally {
            pool.shutdownNow();
        }
        gcUntil(() -> m.stats().outstandingBytes() == 0, "every block to come back");
        ArrayMemory.Stats st = m.stats();
        assertThat(st.cachedBytes()).isLessThanOrEqualTo(8 * MiB);
        assertThat(st.hits() + st.misses()).isEqualTo(large.get());
        assertThat(st.hits()).isPositive();
    }
}
