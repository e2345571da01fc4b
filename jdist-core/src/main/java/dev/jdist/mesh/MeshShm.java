package dev.jdist.mesh;

import dev.jdist.shm.ShmFiles;
import dev.jdist.shm.ShmLink;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The shared memory of one mesh pair on one host (docs/reference/collectives.md §10.2): one file that the connecting
 * member (the lower rank) creates with {@link ShmFiles}, holding two {@link ShmLink}s, one per direction. The pair agrees
 * on it over the connection it has just authenticated:
 * <pre>
 *   connector → acceptor  offer: status (1 = a file follows, 0 = none) ‖ capacity (i64) ‖ text length (u16) ‖ text
 *                         (the file's path, or why there is none), {@value #OFFER} bytes in all
 *   acceptor  → connector 0x01 (mapped: the pair runs over shared memory) or 0x00 (it runs over TCP)
 * </pre>
 * The acceptor deletes the file as soon as it has mapped it (it is the last to map), the connector when the answer comes
 * or the handshake fails; from then on the memory lives only in the two mappings, so nothing is left in {@code /dev/shm}
 * once the pair is set up, even if a member is killed later.
 */
final class MeshShm {
    static final String FILE_PREFIX = "jdist-mesh-";
    /** Bytes of the offer. */
    static final int OFFER = 512;
    private static final int OFFER_TEXT = OFFER - 11;
    /** File header: magic 8 | version 4 | connector 4 | acceptor 4 | capacity 8 | size 8 | mesh tag 8 (the rest zero). */
    static final long FILE_HEADER = 4096;
    private static final long MAGIC = 0x314853454d54534aL;   // "JSTMESH1" read little-endian
    private static final int VERSION = 1;
    /** The most shared memory one member maps for its mesh pairs (two links per peer). */
    static final long MAX_MAPPED_PER_MEMBER = 16L << 20;
    static final long MIN_CAPACITY = 4096;
    private static final long MAX_CAPACITY = 8L << 20;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;

    private MeshShm() {}

    /** This member's two links to one peer. */
    record Links(ShmLink out, ShmLink in) {}

    /** A file the connector created and mapped, and the offer that names it. */
    record Created(Path path, MemorySegment map, long capacity) {}

    /**
     * The data capacity of each link: {@code requested} ({@code JDIST_SHM_BUFFER_KIB}) rounded down to a power of two,
     * lowered so that the links to all {@code members - 1} peers fit in {@link #MAX_MAPPED_PER_MEMBER}.
     */
    static long capacity(long requested, int members) {
        long fit = Long.highestOneBit(Math.max(1, MAX_MAPPED_PER_MEMBER / (2L * Math.max(1, members - 1)) - ShmLink.DATA));
        return Math.max(MIN_CAPACITY, Math.min(Math.min(Long.highestOneBit(Math.max(1, requested)), MAX_CAPACITY), fit));
    }

    static long fileBytes(long capacity) { return FILE_HEADER + 2 * ShmLink.regionBytes(capacity); }

    /** Connector: creates, fills and maps the pair's file (deleted by the caller on every path). */
    static Created create(long capacity, int connector, int acceptor, long meshTag, Arena arena) throws IOException {
        long size = fileBytes(capacity);
        Path p = ShmFiles.create(FILE_PREFIX, size);
        try {
            MemorySegment m = ShmFiles.map(p, 0, size, arena);
            m.set(LONG, 0, MAGIC);
            m.set(INT, 8, VERSION);
            m.set(INT, 12, connector);
            m.set(INT, 16, acceptor);
            m.set(LONG, 20, capacity);
            m.set(LONG, 28, size);
            m.set(LONG, 36, meshTag);
            return new Created(p, m, capacity);
        } catch (IOException | RuntimeException e) {
            ShmFiles.deleteQuietly(p);
            throw e;
        }
    }

    /** The offer naming {@code c}, or (with {@code c} null) saying why there is no file. */
    static ByteBuffer offer(Created c, String whyNot) {
        byte[] text = (c != null ? c.path().toString() : whyNot).getBytes(StandardCharsets.UTF_8);
        int len = Math.min(text.length, OFFER_TEXT);
        ByteBuffer b = ByteBuffer.allocate(OFFER).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) (c != null ? 1 : 0)).putLong(c != null ? c.capacity() : 0).putShort((short) len).put(text, 0, len);
        return b.clear();
    }

    /** Whether an offer names a file. */
    static boolean offersFile(byte[] offer) { return offer[0] == 1; }

    /** The offer's text: the path, or why there is none. */
    static String offerText(byte[] offer) {
        ByteBuffer b = ByteBuffer.wrap(offer).order(ByteOrder.LITTLE_ENDIAN);
        int len = Math.min(Short.toUnsignedInt(b.getShort(9)), OFFER_TEXT);
        return new String(offer, 11, len, StandardCharsets.UTF_8);
    }

    /**
     * Acceptor: checks and maps the file an offer names, then deletes it. The {@link IOException} says what is wrong
     * (another /dev/shm: a container of its own; a malformed offer).
     */
    static Links open(byte[] offer, int connector, int acceptor, long meshTag, Arena arena) throws IOException {
        long capacity = ByteBuffer.wrap(offer).order(ByteOrder.LITTLE_ENDIAN).getLong(1);
        if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY || Long.bitCount(capacity) != 1) {
            throw new IOException("the offer names a link capacity of " + capacity + " bytes");
        }
        long size = fileBytes(capacity);
        Path p = ShmFiles.checkName(offerText(offer), FILE_PREFIX, size);
        try {
            MemorySegment m = ShmFiles.map(p, 0, size, arena);
            if (m.get(LONG, 0) != MAGIC || m.get(INT, 8) != VERSION || m.get(INT, 12) != connector || m.get(INT, 16) != acceptor
                    || m.get(LONG, 20) != capacity || m.get(LONG, 28) != size || m.get(LONG, 36) != meshTag) {
                throw new IOException(p + "'s header does not describe the links of ranks " + connector + " and " + acceptor
                        + " of this group");
            }
            return links(m, capacity, false);
        } finally {
            ShmFiles.deleteQuietly(p);   // the last member to map it
        }
    }

    /** The links in a mapped file: the first carries the connector's stream, the second the acceptor's. */
    static Links links(MemorySegment map, long capacity, boolean connector) {
        long stride = ShmLink.regionBytes(capacity);
        ShmLink fromConnector = new ShmLink(map.asSlice(FILE_HEADER, stride), capacity);
        ShmLink fromAcceptor = new ShmLink(map.asSlice(FILE_HEADER + stride, stride), capacity);
        return connector ? new Links(fromConnector, fromAcceptor) : new Links(fromAcceptor, fromConnector);
    }
}
