package dev.jdist.ring;

import dev.jdist.ConfigException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.PeerLostException;
import dev.jdist.shm.ShmFiles;
import dev.jdist.shm.ShmLink;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Switches a freshly formed ring to shared memory ({@code JDIST_TRANSPORT=shm}), using the ring's
 * own TCP connections (already authenticated when {@code JDIST_JOB_TOKEN} is set) to agree:
 *
 * <ol>
 *   <li>every rank all-gathers (boot id, host name, pid); if the boot ids differ, every rank fails
 *       with the same {@link ConfigException} naming the ranks on other hosts than rank 0 — jdist does
 *       not fall back to TCP silently;</li>
 *   <li>every rank creates one file under {@code /dev/shm} (else {@code java.io.tmpdir}), mode 0600,
 *       for the links of its k connections to its right neighbour (two per connection, one per
 *       direction), fills it (so a full {@code /dev/shm} is an error now, not a crash later), maps it
 *       and all-gathers its path;</li>
 *   <li>every rank maps its left neighbour's file and all-gathers whether that worked; then every
 *       creator deletes its file, so nothing is left behind once set-up is over, even if a rank is
 *       killed later (the mappings keep the memory alive until the last rank unmaps it).</li>
 * </ol>
 * Any failure fails every rank (the status is exchanged before anyone gives up).
 */
final class ShmSetup {
    static final String FILE_PREFIX = "jdist-ring-";
    private static final long MAGIC = 0x314d48532d54534aL;   // "JST-SHM1" read little-endian
    private static final int VERSION = 1;
    private static final int HOST_RECORD = 128;              // magic 8 | pid 8 | boot id 48 | host name 64
    private static final int TEXT_RECORD = 512;              // magic 8 | status 8 | text 496
    static final long FILE_HEADER = 4096;                    // magic 8 | version 4 | creator 4 | k 4 | n 4 | capacity 8 | size 8
    /** The most shared memory one rank maps for one group: its own file and its left neighbour's. */
    static final long MAX_MAPPED_PER_GROUP = 32L << 20;
    private static final long MIN_CAPACITY = 4096;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;

    private ShmSetup() {}

    /** One rank's answer in the host check. */
    record Host(int rank, String bootId, String hostName, long pid) {}

    /** The data capacity of each link: the request, lowered so that the 4k links one rank maps fit in 32 MiB. */
    static long linkCapacity(long requested, int k) {
        long fit = Long.highestOneBit(Math.max(1, MAX_MAPPED_PER_GROUP / (4L * k) - ShmLink.DATA));
        return Math.max(MIN_CAPACITY, Math.min(Long.highestOneBit(Math.max(1, requested)), fit));
    }

    static long fileBytes(int k, long capacity) { return FILE_HEADER + 2L * k * ShmLink.regionBytes(capacity); }

    /**
     * Runs the set-up over {@code tcp} (the newly formed ring {@code settings} describe) and returns the
     * shared-memory transport that replaces it on the same connections; {@code tcp} is detached on success. On
     * failure {@code tcp} is left to the caller to close.
     */
    static ShmTransport establish(TcpTransport tcp, RingSettings settings, RingLog log) {
        RingConnector.Connections connections = tcp.connections;
        int r = settings.rank();
        int n = settings.size();
        int k = connections.perNeighbour();
        int left = settings.leftRank();
        long capacity = linkCapacity(settings.shmLinkBytes(), k);
        long size = fileBytes(k, capacity);
        Arena maps = Arena.ofShared();
        Path own = null;
        boolean ok = false;
        try (Arena scratch = Arena.ofConfined()) {
            // 1. one host?
            MemorySegment hostRec = scratch.allocate(HOST_RECORD, 8);
            hostRec.set(LONG, 0, MAGIC);
            hostRec.set(LONG, 8, ProcessHandle.current().pid());
            putText(hostRec, 16, 48, bootId());
            putText(hostRec, 64, 64, hostName());
            MemorySegment hosts = allGather(tcp, r, n, k, hostRec, scratch, "the host check");
            List<Host> all = new ArrayList<>();
            for (int q = 0; q < n; q++) {
                long base = (long) q * HOST_RECORD;
                if (hosts.get(LONG, base) != MAGIC) throw notShm(r, q);
                all.add(new Host(q, getText(hosts, base + 16, 48), getText(hosts, base + 64, 64), hosts.get(LONG, base + 8)));
            }
            checkOneHost(r, all);
            log.log("all " + n + " ranks are on host " + all.getFirst().hostName() + "; setting up shared memory ("
                    + capacity / 1024 + " KiB per direction and connection)");

            // 2. create, fill and map this rank's file for its right[j] connections
            MemorySegment ownMap = null;
            String createError = null;
            try {
                own = createFile(size);
                ownMap = mapFile(own, size, maps);
                ownMap.set(LONG, 0, MAGIC);
                ownMap.set(INT, 8, VERSION);
                ownMap.set(INT, 12, r);
                ownMap.set(INT, 16, k);
                ownMap.set(INT, 20, n);
                ownMap.set(LONG, 24, capacity);
                ownMap.set(LONG, 32, size);
            } catch (IOException | RuntimeException e) {
                createError = "cannot create " + (own != null ? own : "a " + size + "-byte file in " + directory()) + ": " + e
                        + "; /dev/shm may be full or too small (`df -h /dev/shm`): free space, make it larger, or lower "
                        + RingSettings.SHM_BUFFER;
            }
            MemorySegment names = allGather(tcp, r, n, k,
                    textRecord(scratch, createError == null, createError == null ? own.toString() : createError), scratch,
                    "the exchange of shared-memory file names");
            for (int q = 0; q < n; q++) {
                if (!recordOk(names, q)) {
                    throw new ConfigException("rank " + r + ": rank " + q + " could not set up its shared memory for "
                            + RingSettings.TRANSPORT + "=shm: " + recordText(names, q) + "; or unset "
                            + RingSettings.TRANSPORT + " to run over TCP");
                }
            }

            // 3. map the left neighbour's file (its right[j] are this rank's left[j])
            MemorySegment leftMap = null;
            String leftPath = recordText(names, left);
            String openError = null;
            try {
                leftMap = openFile(leftPath, size, left, k, n, capacity, maps);
            } catch (IOException | RuntimeException e) {
                openError = "cannot map " + leftPath + " (created by rank " + left + "): " + e;
            }
            MemorySegment status = allGather(tcp, r, n, k, textRecord(scratch, openError == null,
                    openError == null ? "ok" : openError), scratch, "the shared-memory mapping check");
            deleteQuietly(own);   // everyone has mapped (or given up on) every file
            own = null;
            for (int q = 0; q < n; q++) {
                if (!recordOk(status, q)) {
                    throw new ConfigException("rank " + r + ": rank " + q + " " + recordText(status, q) + ". "
                            + RingSettings.TRANSPORT + "=shm needs every rank to share /dev/shm: one host, one container "
                            + "(IPC and mount namespace), one user; or unset " + RingSettings.TRANSPORT + " to run over TCP");
                }
            }

            ShmLink[] rightOut = new ShmLink[k];
            ShmLink[] rightIn = new ShmLink[k];
            ShmLink[] leftOut = new ShmLink[k];
            ShmLink[] leftIn = new ShmLink[k];
            long stride = ShmLink.regionBytes(capacity);
            for (int j = 0; j < k; j++) {
                long a = FILE_HEADER + 2L * j * stride;       // creator -> its right neighbour
                long b = a + stride;                          // the right neighbour -> creator
                rightOut[j] = new ShmLink(ownMap.asSlice(a, stride), capacity);
                rightIn[j] = new ShmLink(ownMap.asSlice(b, stride), capacity);
                leftIn[j] = new ShmLink(leftMap.asSlice(a, stride), capacity);
                leftOut[j] = new ShmLink(leftMap.asSlice(b, stride), capacity);
            }
            tcp.detach();
            ShmTransport shm = new ShmTransport(settings, connections, leftOut, leftIn, rightOut, rightIn, maps, log);
            ok = true;
            return shm;
        } catch (IOException e) {
            connections.closeAll();
            throw new PeerLostException("rank " + r + ": cannot take over the ring's connections for shared memory: " + e, e);
        } finally {
            deleteQuietly(own);
            if (!ok) maps.close();
        }
    }

    /**
     * Fails (the same way on every rank, which all see the same list) unless every rank has the same
     * boot id, naming the ranks that are not on rank 0's host.
     */
    static void checkOneHost(int rank, List<Host> hosts) {
        Map<String, List<Host>> byBoot = new LinkedHashMap<>();
        for (Host h : hosts) byBoot.computeIfAbsent(h.bootId(), b -> new ArrayList<>()).add(h);
        if (byBoot.size() <= 1) return;
        String first = hosts.getFirst().bootId();
        String others = hosts.stream().filter(h -> !h.bootId().equals(first)).map(h -> Integer.toString(h.rank()))
                .collect(Collectors.joining(", "));
        String where = byBoot.values().stream().map(hs -> "rank" + (hs.size() > 1 ? "s " : " ")
                        + hs.stream().map(h -> Integer.toString(h.rank())).collect(Collectors.joining(", "))
                        + " on host '" + hs.getFirst().hostName() + "' (boot id " + hs.getFirst().bootId() + ")")
                .collect(Collectors.joining("; "));
        throw new ConfigException("rank " + rank + ": " + RingSettings.TRANSPORT + "=shm needs every rank of the group on "
                + "one host, but rank(s) " + others + " are on another host than rank 0 (" + where + "). Unset "
                + RingSettings.TRANSPORT + " (or set it to tcp) to run this job over TCP");
    }

    private static ConfigException notShm(int rank, int q) {
        return new ConfigException("rank " + rank + ": rank " + q + " did not take part in the shared-memory set-up that "
                + RingSettings.TRANSPORT + "=shm starts after the ring connects; every rank must be started with the "
                + "same " + RingSettings.TRANSPORT + " (`jdist launch --env " + RingSettings.TRANSPORT + "=shm ...` sets it "
                + "for all)");
    }

    private static MemorySegment allGather(TcpTransport tcp, int r, int n, int k, MemorySegment mine, Arena a, String what) {
        long b = mine.byteSize();
        MemorySegment all = a.allocate(b * n, 8);
        MemorySegment.copy(mine, 0, all, r * b, b);
        String hint = " (during " + what + " of " + RingSettings.TRANSPORT + "=shm; every rank must be started with the "
                + "same " + RingSettings.TRANSPORT + ")";
        try {
            tcp.run(Transfer.of("shared-memory set-up", RingSchedule.allGather(r, n, k, b), all));
        } catch (DeadlineExceededException e) {
            throw new DeadlineExceededException(e.getMessage() + hint, e);
        } catch (PeerLostException e) {
            throw new PeerLostException(e.getMessage() + hint, e);
        }
        return all;
    }

    // ------------------------------------------------------------------ files

    /** Where the files are made ({@link ShmFiles#directory()}). */
    static Path directory() { return ShmFiles.directory(); }

    private static Path createFile(long size) throws IOException {
        return ShmFiles.create(FILE_PREFIX, size);
    }

    private static MemorySegment mapFile(Path p, long size, Arena arena) throws IOException {
        return ShmFiles.map(p, 0, size, arena);
    }

    private static MemorySegment openFile(String text, long size, int creator, int k, int n, long capacity, Arena arena)
            throws IOException {
        Path p = ShmFiles.checkName(text, FILE_PREFIX, size);
        MemorySegment m = mapFile(p, size, arena);
        if (m.get(LONG, 0) != MAGIC || m.get(INT, 8) != VERSION || m.get(INT, 12) != creator || m.get(INT, 16) != k
                || m.get(INT, 20) != n || m.get(LONG, 24) != capacity || m.get(LONG, 32) != size) {
            throw new IOException("its header does not describe rank " + creator + "'s links for this ring");
        }
        return m;
    }

    static void deleteQuietly(Path p) { ShmFiles.deleteQuietly(p); }

    // ------------------------------------------------------------------ records

    private static MemorySegment textRecord(Arena a, boolean ok, String text) {
        MemorySegment s = a.allocate(TEXT_RECORD, 8);
        s.set(LONG, 0, MAGIC);
        s.set(LONG, 8, ok ? 0 : 1);
        putText(s, 16, TEXT_RECORD - 16, text);
        return s;
    }

    private static boolean recordOk(MemorySegment all, int q) {
        long base = (long) q * TEXT_RECORD;
        return all.get(LONG, base) == MAGIC && all.get(LONG, base + 8) == 0;
    }

    private static String recordText(MemorySegment all, int q) {
        long base = (long) q * TEXT_RECORD;
        if (all.get(LONG, base) != MAGIC) return "sent a malformed set-up record";
        return getText(all, base + 16, TEXT_RECORD - 16);
    }

    private static void putText(MemorySegment s, long offset, int max, String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(b.length, max);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, offset, len);
        for (long i = offset + len; i < offset + max; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) 0);
    }

    private static String getText(MemorySegment s, long offset, int max) {
        byte[] b = new byte[max];
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, offset, b, 0, max);
        int len = 0;
        while (len < max && b[len] != 0) len++;
        return new String(b, 0, len, StandardCharsets.UTF_8);
    }

    static String bootId() {
        return ShmFiles.bootId().orElseThrow(() -> new ConfigException(RingSettings.TRANSPORT + "=shm needs "
                + "/proc/sys/kernel/random/boot_id (Linux) to check that every rank is on one host, and it cannot be read here; "
                + "unset " + RingSettings.TRANSPORT + " to run over TCP"));
    }

    static String hostName() { return ShmFiles.hostName(); }
}
