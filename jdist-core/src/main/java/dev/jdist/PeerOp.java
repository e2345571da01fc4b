package dev.jdist;

import java.util.Objects;

/**
 * One send or receive of a batch ({@link Group#batchSendRecv}): the transfers of a batch are issued together and
 * complete together, so a pipeline stage can send to the next stage and receive from the previous one in one call,
 * in any order, without deadlock (spec docs/reference/collectives.md §13.6).
 *
 * <p>{@link #send(Array, int)} sends the bytes of an array; {@link #recv(Array, int)} receives into an array the
 * caller owns (its byte count must equal the sender's); {@link #recv(int[], DType, int)} receives into a new array,
 * which {@link #array()} (and the list {@code batchSendRecv} returns) gives back once the batch has completed.
 */
public final class PeerOp {
    private final boolean send;
    private final Array array;
    private final int peer;

    private PeerOp(boolean send, Array array, int peer) {
        this.send = send;
        this.array = Objects.requireNonNull(array, send ? "the array to send" : "the array to receive into");
        this.peer = peer;
    }

    /** Sends the bytes of {@code x} to rank {@code dst}. */
    public static PeerOp send(Array x, int dst) { return new PeerOp(true, x, dst); }

    /** Receives from rank {@code src} into {@code out} (written whole; its byte count must equal the sender's). */
    public static PeerOp recv(Array out, int src) { return new PeerOp(false, out, src); }

    /** Receives an array of {@code shape} and {@code dtype} from rank {@code src} into a new array. */
    public static PeerOp recv(int[] shape, DType dtype, int src) {
        if (shape == null || dtype == null) {
            throw new IllegalArgumentException("recv needs a shape and a dtype, got "
                    + (shape == null ? "no shape" : java.util.Arrays.toString(shape)) + " and " + dtype);
        }
        Array.elementCount(shape);   // rejects negative dimensions, naming the shape
        return new PeerOp(false, Array.uninitialized(dtype, shape), src);
    }

    /** Whether this is a send (else a receive). */
    public boolean isSend() { return send; }

    /** The array sent, or the one received into. */
    public Array array() { return array; }

    /** The other rank: the destination of a send, the source of a receive. */
    public int peer() { return peer; }

    @Override
    public String toString() {
        return (send ? "send to rank " : "recv from rank ") + peer + " (" + array.dtype().mlxName()
                + java.util.Arrays.toString(array.shape()).replace(" ", "") + ")";
    }
}
