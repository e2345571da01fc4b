package dev.jdist.memory;

import dev.jdist.ConfigException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the {@link dev.jdist.Array} factories get their native memory: a caching allocator in the spirit of
 * MLX's buffer cache, with the GC nudge of the JDK's direct-buffer accounting.
 *
 * <ul>
 *   <li>Arrays under {@link #LARGE_BYTES} get {@code Arena.ofAuto()} memory, as always.</li>
 *   <li>Larger arrays get a block of a size class ({@link #sizeClass}: at most 12.5% larger than asked).
 *       A block is {@code Arena.ofShared()} memory; the array sees a view of it whose lifetime is an
 *       automatic arena's (it lives while any segment derived from the array, slices and byte buffers
 *       included, is reachable). When the view's arena is collected, its cleanup (on the cleaner
 *       thread) returns the block to this cache, so a block is reused only after every view of it
 *       is unreachable: no use after free, no two live arrays sharing memory.</li>
 *   <li>The cache holds at most {@code cacheBound} bytes; a block returned beyond that frees the
 *       oldest cached blocks (their arenas are closed).</li>
 *   <li>GC nudge: arrays are small heap objects over big native blocks, so the GC rarely runs on its
 *       own. When an allocation misses the cache after at least {@code gcBudget} bytes of large
 *       arrays were handed out since the last nudge, and at least {@code gcBudget} bytes are still
 *       out, it calls {@link System#gc()} once and waits up to {@link #GC_WAIT_NANOS} for a block of
 *       its class to come back. So {@code y = group.allSum(x)} in a loop runs at bounded memory and
 *       reuses warm blocks. A nudge that brings nothing back (the program holds its arrays) doubles
 *       the threshold, up to 4 x {@code gcBudget}; one that does resets it.</li>
 * </ul>
 *
 * <p>Views are made with the restricted method {@link MemorySegment#reinterpret(long, Arena,
 * java.util.function.Consumer)}; without native access for jdist's module ({@code jdist launch} gives
 * Java ranks {@code --enable-native-access=ALL-UNNAMED}) the cache is off and every array gets
 * {@code Arena.ofAuto()} memory, so no warning is printed.
 */
public final class ArrayMemory {

    /** Environment variable: the cache bound in bytes ({@code 0} turns the cache off). */
    static final String ENV = "JDIST_ARRAY_CACHE_BYTES";
    static final long DEFAULT_CACHE_BYTES = 1L << 30;
    /** Arrays from this many bytes up come from the cache. */
    static final long LARGE_BYTES = 1L << 20;
    /** Bytes of large arrays handed out (and still out) between two GC nudges. */
    static final long DEFAULT_GC_BUDGET_BYTES = 256L << 20;
    /** How long a nudge waits for a block of the wanted class to come back. */
    static final long GC_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    static final int ALIGNMENT = 64;

    /** A cached native block: its own shared arena, so an evicted block can be freed. */
    private static final class Block {
        final Arena arena;
        final MemorySegment raw;
        final long classBytes;

        Block(Arena arena, MemorySegment raw, long classBytes) {
            this.arena = arena;
            this.raw = raw;
            this.classBytes = classBytes;
        }
    }

    /** Counters, for tests and measurements. */
    public record Stats(long cachedBytes, int cachedBlocks, long outstandingBytes, long hits, long misses, long nudges,
                 long evictions) {}

    private final long cacheBound;
    private final long gcBudget;
    private final long largeBytes;
    private final boolean caching;

    // All guarded by this.
    private final Map<Long, ArrayDeque<Block>> free = new HashMap<>();
    private final LinkedHashSet<Block> lru = new LinkedHashSet<>();     // oldest first
    private long cachedBytes;
    private long outstandingBytes;
    private long allocatedSinceNudge;
    private long nudgeThreshold;            // gcBudget, doubled (up to 4x) after a nudge that freed nothing
    private long returns;                   // blocks given back by cleanups, ever
    private long hits, misses, nudges, evictions;

    ArrayMemory(long cacheBound, long gcBudget, long largeBytes, boolean nativeAccess) {
        if (cacheBound < 0 || gcBudget < 0 || largeBytes < 1) {
            throw new IllegalArgumentException("cacheBound " + cacheBound + ", gcBudget " + gcBudget + ", largeBytes "
                    + largeBytes + ": need cacheBound >= 0, gcBudget >= 0, largeBytes >= 1");
        }
        this.cacheBound = cacheBound;
        this.gcBudget = gcBudget;
        this.largeBytes = largeBytes;
        this.caching = cacheBound > 0 && nativeAccess;
        this.nudgeThreshold = gcBudget;
    }

    // ---------------------------------------------------------------- the process-wide instance

    private static volatile ArrayMemory shared;

    /** The instance the factories use, configured from {@value #ENV} on first use. */
    public static ArrayMemory shared() {
        ArrayMemory m = shared;
        if (m == null) {
            synchronized (ArrayMemory.class) {
                m = shared;
                if (m == null) {
                    // An invalid value throws here, every time, instead of failing class initialisation.
                    long bound = parseCacheBytes(System.getenv(ENV));
                    shared = m = new ArrayMemory(bound, DEFAULT_GC_BUDGET_BYTES, LARGE_BYTES,
                            ArrayMemory.class.getModule().isNativeAccessEnabled());
                }
            }
        }
        return m;
    }

    private static final Pattern BYTES = Pattern.compile("(\\d{1,19})\\s*(b|kib|mib|gib|tib)?");

    /** {@code null} or blank: the default. Otherwise a whole number of bytes, optionally with B/KiB/MiB/GiB/TiB. */
    static long parseCacheBytes(String value) {
        if (value == null || value.isBlank()) return DEFAULT_CACHE_BYTES;
        Matcher m = BYTES.matcher(value.strip().toLowerCase(Locale.ROOT));
        long n = -1;
        if (m.matches()) {
            try {
                long unit = switch (m.group(2) == null ? "b" : m.group(2)) {
                    case "kib" -> 1L << 10;
                    case "mib" -> 1L << 20;
                    case "gib" -> 1L << 30;
                    case "tib" -> 1L << 40;
                    default -> 1L;
                };
                n = Math.multiplyExact(Long.parseLong(m.group(1)), unit);
            } catch (ArithmeticException | NumberFormatException e) {
                n = -1;
            }
        }
        if (n < 0) {
            throw new ConfigException(ENV + "='" + value + "' is not a byte count; set it to a whole number of bytes "
                    + "such as 1073741824 or 1GiB (units B, KiB, MiB, GiB, TiB; 0 turns the array cache off), "
                    + "or unset it for the default (1 GiB)");
        }
        return n;
    }

    // ---------------------------------------------------------------- allocation

    /**
     * Native memory of exactly {@code bytes} bytes, 64-byte aligned, released when nothing derived from
     * it is reachable. {@code zeroed}: all zero; otherwise the contents are unspecified (the caller
     * overwrites every byte).
     */
    public MemorySegment allocate(long bytes, boolean zeroed) {
        if (bytes < 0) throw new IllegalArgumentException("cannot allocate " + bytes + " bytes");
        if (!caching || bytes < largeBytes) return Arena.ofAuto().allocate(bytes, ALIGNMENT);
        long cls = sizeClass(bytes);
        boolean nudge;
        long returnsBefore;
        Block b;
        synchronized (this) {
            b = poll(cls);
            nudge = b == null && allocatedSinceNudge >= nudgeThreshold && outstandingBytes >= nudgeThreshold;
            if (nudge) {
                allocatedSinceNudge = 0;
                nudges++;
            }
            allocatedSinceNudge += cls;
            returnsBefore = returns;
        }
        if (nudge) {
            System.gc();
            b = awaitReturned(cls, GC_WAIT_NANOS);
            synchronized (this) {
                // A nudge that brought nothing back means the program holds its arrays: nudge less often.
                nudgeThreshold = returns > returnsBefore ? gcBudget
                        : Math.min(saturatingTimes(nudgeThreshold, 2), saturatingTimes(gcBudget, 4));
            }
        }
        if (b == null) {
            b = allocateBlock(cls);     // fresh memory is zero-filled by the arena
        } else if (zeroed) {
            b.raw.asSlice(0, bytes).fill((byte) 0);
        }
        Block block = b;
        // The cleanup must not reach the view (it would keep it alive): it holds only the block.
        return b.raw.reinterpret(bytes, Arena.ofAuto(), ignored -> release(block));
    }

    private static long saturatingTimes(long a, int b) {
        return a > Long.MAX_VALUE / b ? Long.MAX_VALUE : a * b;
    }

    /** The smallest size class holding {@code bytes}: a multiple of 1/8 of its highest power of two (≤ 12.5% waste). */
    static long sizeClass(long bytes) {
        if (bytes <= 0) throw new IllegalArgumentException("size class of " + bytes + " bytes");
        long step = Math.max(1, Long.highestOneBit(bytes) >>> 3);
        return Math.multiplyExact(Math.ceilDiv(bytes, step), step);
    }

    /** A cached block of class {@code cls}, most recently returned first; guarded by this. */
    private Block poll(long cls) {
        ArrayDeque<Block> q = free.get(cls);
        Block b = q == null ? null : q.pollLast();
        if (b == null) return null;
        lru.remove(b);
        cachedBytes -= cls;
        outstandingBytes += cls;
        hits++;
        return b;
    }

    private synchronized Block awaitReturned(long cls, long waitNanos) {
        long deadline = System.nanoTime() + waitNanos;
        while (true) {
            Block b = poll(cls);
            if (b != null) return b;
            long left = deadline - System.nanoTime();
            if (left <= 0) return null;
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
    }

    private Block allocateBlock(long cls) {
        Arena arena = Arena.ofShared();
        MemorySegment raw;
        try {
            raw = arena.allocate(cls, ALIGNMENT);
        } catch (OutOfMemoryError e) {
            // Out of native memory: give the cached blocks back to the system and try once more.
            trim();
            try {
                raw = arena.allocate(cls, ALIGNMENT);
            } catch (OutOfMemoryError again) {
                arena.close();
                throw again;
            }
        }
        synchronized (this) {
            outstandingBytes += cls;
            misses++;
        }
        return new Block(arena, raw, cls);
    }

    /** The view's cleanup (cleaner thread): the block goes back to the cache, or is freed beyond the bound. */
    private void release(Block b) {
        List<Block> evicted = new ArrayList<>(1);
        synchronized (this) {
            outstandingBytes -= b.classBytes;
            returns++;
            if (b.classBytes > cacheBound) {
                evicted.add(b);
                evictions++;
            } else {
                free.computeIfAbsent(b.classBytes, k -> new ArrayDeque<>()).addLast(b);
                lru.addLast(b);
                cachedBytes += b.classBytes;
                while (cachedBytes > cacheBound) {
                    Block old = lru.removeFirst();
                    free.get(old.classBytes).remove(old);
                    cachedBytes -= old.classBytes;
                    evicted.add(old);
                    evictions++;
                }
                notifyAll();
            }
        }
        for (Block e : evicted) e.arena.close();    // outside the lock: closing a shared arena is a handshake
    }

    /** Frees every cached block (blocks in use are not affected). */
    void trim() {
        List<Block> all;
        synchronized (this) {
            all = new ArrayList<>(lru);
            lru.clear();
            free.clear();
            cachedBytes = 0;
            evictions += all.size();
        }
        for (Block b : all) b.arena.close();
    }

    public synchronized Stats stats() {
        return new Stats(cachedBytes, lru.size(), outstandingBytes, hits, misses, nudges, evictions);
    }

    public boolean caching() { return caching; }

    long cacheBound() { return cacheBound; }
}
