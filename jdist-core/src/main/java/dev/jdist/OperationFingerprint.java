package dev.jdist;

import dev.jdist.flight.OperationTrace;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.zip.CRC32;

/**
 * What one operation of a group is, as every rank must agree on it: its sequence number in the group, its number among
 * the group's collectives, the operation, the dtype, the shape and the peer of a send or recv. {@link OperationQueue}
 * computes it once per operation, when its turn comes; the liveness watch reports it in heartbeats, the mismatch check
 * compares it across ranks (docs/reliability.md), and the flight recorder keeps it.
 *
 * <p>The {@link #collective()} number is what ranks compare: every rank issues the same collectives in the same order,
 * while sends and receives involve only two ranks, so sequence numbers of ranks that exchanged point-to-point messages
 * differ. A fingerprint travels between jdist ranks as {@link #BYTES} bytes ({@link #encode}).
 */
public final class OperationFingerprint {
    /** The encoded size (docs/reference/collectives.md §12.1). */
    public static final int BYTES = 64;
    private static final int MAGIC = 0x4A444650;   // "JDFP"
    private static final int VERSION = 1;
    private static final int DIMS_ENCODED = 4;

    private final long sequence;
    private final long collective;
    private final OperationTrace.Kind kind;
    private final DType dtype;      // null for split
    private final int[] shape;      // null for split; decoded: axes after the fourth are -1
    private final int shapeHash;    // of the whole shape, also when decoded
    private final long elements;
    private final int peer;
    private final int history;

    OperationFingerprint(long sequence, long collective, OperationTrace.Kind kind, DType dtype, int[] shape, int peer, int previous) {
        this(sequence, collective, kind, dtype, shape, shape == null ? 0 : Arrays.hashCode(shape), elementsOf(shape), peer,
                previous);
    }

    private OperationFingerprint(long sequence, long collective, OperationTrace.Kind kind, DType dtype, int[] shape, int shapeHash,
                                 long elements, int peer, int history, boolean decoded) {
        this.sequence = sequence;
        this.collective = collective;
        this.kind = kind;
        this.dtype = dtype;
        this.shape = shape;
        this.shapeHash = shapeHash;
        this.elements = elements;
        this.peer = peer;
        this.history = history;
    }

    private OperationFingerprint(long sequence, long collective, OperationTrace.Kind kind, DType dtype, int[] shape, int shapeHash,
                                 long elements, int peer, int previous) {
        this.sequence = sequence;
        this.collective = collective;
        this.kind = kind;
        this.dtype = dtype;
        this.shape = shape;
        this.shapeHash = shapeHash;
        this.elements = elements;
        this.peer = peer;
        this.history = isCollective() ? chain(previous, kind, dtype, elements) : previous;
    }

    /** The digest of the collectives up to one of {@code kind, dtype, elements}, after {@code previous} (FNV-1a style). */
    private static int chain(int previous, OperationTrace.Kind kind, DType dtype, long elements) {
        if (!kind.sameShapeOnEveryRank()) elements = 0;   // all_to_all_v: each rank's count is its own
        int h = previous ^ 0x811C9DC5;
        h = (h ^ kind.ordinal()) * 0x01000193;
        h = (h ^ (dtype == null ? 0xFF : dtype.ordinal())) * 0x01000193;
        h = (h ^ (int) elements) * 0x01000193;
        h = (h ^ (int) (elements >>> 32)) * 0x01000193;
        return h;
    }

    /**
     * A digest of this rank's collectives up to and including this operation (each one's operation, dtype and element
     * count): ranks whose digests differ at the same collective number called different collectives at or before it,
     * even when the differing call is too far back to be seen.
     */
    public int history() { return history; }

    /**
     * A fingerprint built from its parts (tools that read recorded operations, tests); {@code operation} is MLX's name
     * ({@code all_sum}, ..., {@code split}).
     */
    public static OperationFingerprint of(long sequence, long collective, String operation, DType dtype, int[] shape, int peer) {
        for (OperationTrace.Kind k : OperationTrace.Kind.values()) {
            if (k.mlxName().equals(operation)) {
                return new OperationFingerprint(sequence, collective, k, dtype, shape == null ? null : shape.clone(), peer, 0);
            }
        }
        throw new IllegalArgumentException("unknown operation '" + operation + "'");
    }

    private static long elementsOf(int[] shape) {
        if (shape == null) return 0;
        long e = 1;
        for (int d : shape) e *= d;
        return e;
    }

    /** The operation's number in its group, from 0, in issue order (sends and receives included). */
    public long sequence() { return sequence; }

    /** How many collectives the group ran before this operation: the number every rank's same collective has. */
    public long collective() { return collective; }

    /** MLX's name of the operation: all_sum, all_max, all_min, all_gather, sum_scatter, send, recv or split. */
    public String operation() { return kind.mlxName(); }

    OperationTrace.Kind kind() { return kind; }

    /** The element type; null for split. */
    public DType dtype() { return dtype; }

    /** The shape of the input (recv: of the output); null for split. */
    public int[] shape() { return shape == null ? null : shape.clone(); }

    /** The other rank of a send or recv; -1 for collectives. */
    public int peer() { return peer; }

    /** Whether every rank of the group takes part (everything but send, recv and batches of them). */
    public boolean isCollective() { return kind.collective(); }

    /** Whether this is a batch of sends and receives (its transfers pair up one by one with another batch's). */
    public boolean isBatch() { return kind == OperationTrace.Kind.BATCH_SEND_RECV; }

    /** Elements of the shape (0 for split). */
    public long elements() { return elements; }

    /**
     * Whether two ranks' calls at the same collective number are the same collective: the operation and dtype, and the
     * shape when {@code strict} (else the element count, which fixes the bytes moved). A split matches any split (each
     * rank brings its own colour).
     */
    public boolean sameCall(OperationFingerprint other, boolean strict) {
        if (kind != other.kind) return false;
        if (kind == OperationTrace.Kind.SPLIT) return true;
        if (dtype != other.dtype) return false;
        if (!kind.sameShapeOnEveryRank()) return true;
        if (!strict) return elements == other.elements;
        if (elements != other.elements || shapeHash != other.shapeHash || shape.length != other.shape.length) return false;
        for (int i = 0; i < Math.min(DIMS_ENCODED, shape.length); i++) if (shape[i] != other.shape[i]) return false;
        return true;   // the axes after the fourth compare by the hash
    }

    /** The call without its number: {@code all_sum float32[1024]}, {@code send int32[8] to rank 3}, {@code split}. */
    public String call() {
        if (kind == OperationTrace.Kind.SPLIT) return "split";
        StringBuilder sb = new StringBuilder(kind.mlxName()).append(' ').append(dtype == null ? "?" : dtype.mlxName()).append('[');
        for (int i = 0; shape != null && i < shape.length; i++) sb.append(i > 0 ? "," : "").append(shape[i] < 0 ? "…" : shape[i]);
        sb.append(']');
        if (kind == OperationTrace.Kind.SEND) sb.append(" to rank ").append(peer);
        if (kind == OperationTrace.Kind.RECV) sb.append(" from rank ").append(peer);
        return sb.toString();
    }

    /** {@code all_sum float32[1024] #1834}: the call and its sequence number. */
    public String describe() { return call() + " #" + sequence; }

    @Override
    public String toString() { return describe(); }

    /**
     * The fingerprint as {@link #BYTES} little-endian bytes: magic "JDFP", version, operation, dtype, number of axes,
     * collective number, sequence number, element count, peer, the first four axes, a hash of the whole shape, the
     * {@link #history()} digest and a CRC-32 of the rest.
     */
    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) kind.ordinal()).put((byte) (dtype == null ? 0 : dtype.ordinal() + 1))
                .put((byte) (shape == null ? 0xFF : Math.min(shape.length, 0xFE)));
        b.putLong(collective).putLong(sequence).putLong(elements).putInt(peer);
        for (int i = 0; i < DIMS_ENCODED; i++) b.putInt(shape != null && i < shape.length ? shape[i] : 0);
        b.putInt(shapeHash);
        b.putInt(history);
        CRC32 crc = new CRC32();
        crc.update(b.array(), 0, BYTES - 4);
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /**
     * Reads {@link #encode}'s bytes at {@code offset}; null when they are not a fingerprint (wrong magic, version or
     * checksum: another operation's data). A shape of more than four axes comes back with its first four axes and
     * {@code -1} for the others (shown as … in messages; such shapes still compare by the hash of the whole shape).
     */
    public static OperationFingerprint decode(byte[] bytes, int offset) {
        if (bytes == null || offset < 0 || bytes.length - offset < BYTES) return null;
        ByteBuffer b = ByteBuffer.wrap(bytes, offset, BYTES).slice().order(ByteOrder.LITTLE_ENDIAN);
        CRC32 crc = new CRC32();
        crc.update(bytes, offset, BYTES - 4);
        if (b.getInt(0) != MAGIC || b.get(4) != VERSION || b.getInt(BYTES - 4) != (int) crc.getValue()) return null;
        int kindCode = b.get(5) & 0xFF;
        int dtypeCode = b.get(6) & 0xFF;
        int ndim = b.get(7) & 0xFF;
        OperationTrace.Kind[] kinds = OperationTrace.Kind.values();
        if (kindCode >= kinds.length || dtypeCode > DType.values().length) return null;
        long collective = b.getLong(8);
        long sequence = b.getLong(16);
        long elements = b.getLong(24);
        int peer = b.getInt(32);
        int[] shape = null;
        if (ndim != 0xFF) {
            shape = new int[ndim];
            for (int i = 0; i < ndim; i++) shape[i] = i < DIMS_ENCODED ? b.getInt(36 + 4 * i) : -1;
        }
        return new OperationFingerprint(sequence, collective, kinds[kindCode], dtypeCode == 0 ? null : DType.values()[dtypeCode - 1],
                shape, b.getInt(52), elements, peer, b.getInt(56), true);
    }
}
