package dev.jdist.jaccl;

import dev.jdist.AllGatherFactory;
import dev.jdist.DistributedException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The JACCL side channel (docs/reference/collectives.md §4.2): one primitive, a rank-ordered all-gather of
 * equal-sized byte strings, and the typed exchanges MLX builds on it. The default implementation is
 * {@link TcpSideChannel}; {@link #custom} adapts a user-supplied all-gather function.
 */
public interface SideChannel extends AutoCloseable {

    int rank();

    int size();

    /** Rank-ordered concatenation of every rank's {@code src}; all ranks pass the same length. */
    byte[] allGather(byte[] src);

    /** Releases the connections. Idempotent. */
    @Override
    void close();

    /** A scalar int32 all-gathered as its 4 little-endian bytes. */
    default int[] allGatherInt(int value) {
        byte[] all = allGather(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(value).array());
        int[] out = new int[size()];
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < out.length; i++) out[i] = b.getInt();
        return out;
    }

    /**
     * A vector of fixed-size records: all-gather the lengths as int32, then {@code max * recordSize}
     * bytes per rank, shorter vectors zero-padded at the end. Returns every rank's records.
     */
    default List<List<byte[]>> allGatherRecords(List<byte[]> records, int recordSize) {
        for (byte[] r : records) {
            if (r.length != recordSize) throw new IllegalArgumentException("record of " + r.length + " bytes, expected " + recordSize);
        }
        int[] lengths = allGatherInt(records.size());
        int max = Arrays.stream(lengths).max().orElse(0);
        byte[] mine = new byte[max * recordSize];
        for (int i = 0; i < records.size(); i++) System.arraycopy(records.get(i), 0, mine, i * recordSize, recordSize);
        byte[] all = allGather(mine);
        List<List<byte[]>> out = new ArrayList<>(size());
        for (int q = 0; q < size(); q++) {
            List<byte[]> theirs = new ArrayList<>(lengths[q]);
            for (int i = 0; i < lengths[q]; i++) {
                int off = (q * max + i) * recordSize;
                theirs.add(Arrays.copyOfRange(all, off, off + recordSize));
            }
            out.add(theirs);
        }
        return out;
    }

    /** Two all-gathers of the int32 0. */
    default void barrier() {
        allGatherInt(0);
        allGatherInt(0);
    }

    /** A side channel backed by a user function; a result of the wrong length is an error naming both lengths. */
    static SideChannel custom(int rank, int size, AllGatherFactory factory) {
        if (factory == null) throw new IllegalArgumentException("the JACCL side-channel factory must not be null");
        AllGatherFactory.AllGather f = factory.create(rank, size);
        if (f == null) throw new IllegalArgumentException("the JACCL side-channel factory returned null instead of an all-gather function");
        return new SideChannel() {
            @Override public int rank() { return rank; }
            @Override public int size() { return size; }
            @Override public byte[] allGather(byte[] src) {
                byte[] out = f.allGather(src.clone(), src.length);
                long expected = (long) size * src.length;
                if (out == null || out.length != expected) {
                    throw new DistributedException("the custom JACCL side channel returned " + (out == null ? "null" : out.length + " bytes")
                            + " for an all-gather of " + src.length + " bytes over " + size + " ranks; it must return exactly "
                            + expected + " bytes (the rank-ordered concatenation)");
                }
                return out;
            }
            @Override public void close() {}
        };
    }
}
