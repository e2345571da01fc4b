package dev.jdist.connect;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * One side of a handshake over a new connection, non-blocking: sends what its {@link Side} gives, reads exactly as
 * many bytes as the side expects next, hands them over, and so on until the side has nothing more to send or expect
 * (then {@link Side#finished}) or rejects what it got, or the connection ends or fails (then {@link Side#failed}). The
 * caller's loop calls {@link #advance} whenever the selector reports the key this handshake is attached to.
 *
 * <p>The messages are the side's (the ring's authentication, docs/reference/collectives.md §9; the mesh's handshake,
 * §10.2); this class only moves them. A failure of the connection itself is said as "closed the connection during
 * <i>what</i>" or "failed during <i>what</i>: <i>error</i>", {@code what} being the caller's name for the handshake.
 */
public final class Handshake {

    /** What one side of a handshake says and checks, without the sockets. */
    public interface Side {
        /** The first step: a connector's hello and the length of the answer; an acceptor's nothing and the hello's length. */
        Step first();

        /** The bytes the last step expected have arrived ({@code bytes}: exactly that many): what next. */
        Step received(byte[] bytes);

        /** The last step's message is sent and nothing more is expected. The key is still registered. */
        void finished(Handshake h);

        /**
         * The handshake failed ({@code why}: what the peer did, for messages); its key is cancelled, the channel still
         * open (the side closes it).
         */
        void failed(Handshake h, String why);

        /**
         * The connection ended ({@code cause} null) or failed before a byte came from the peer; the key is cancelled.
         * Returns whether the side handled that (then {@link #failed} is not called), as a connector does whose peer
         * is not there yet, or an acceptor that takes it for a probe. By default, false.
         */
        default boolean endedUnanswered(Handshake h, IOException cause) { return false; }
    }

    /**
     * A step: {@code send} (possibly empty), then read {@code expect} bytes; with nothing to expect the handshake
     * finishes once {@code send} is out. Or, with {@code failure} set, the end: the peer's bytes were wrong.
     */
    public record Step(ByteBuffer send, int expect, String failure) {
        private static final ByteBuffer NOTHING = ByteBuffer.allocate(0);

        /** Sends {@code send} (null: nothing), then reads {@code expect} bytes (0: finishes once sent). */
        public static Step of(ByteBuffer send, int expect) { return new Step(send == null ? NOTHING : send, expect, null); }

        /** Sends {@code send} (null: nothing) and finishes once it is out. */
        public static Step last(ByteBuffer send) { return of(send, 0); }

        /** Ends the handshake as failed: {@code why} says what the peer did. */
        public static Step fail(String why) { return new Step(NOTHING, 0, why); }
    }

    private final SocketChannel channel;
    private final String what;
    private final Side side;
    private ByteBuffer out;
    /** What is read next; null when only the last message is left to send. */
    private ByteBuffer in;
    private boolean heard;
    private boolean finished;
    private SelectionKey key;

    /** A handshake on {@code channel}; {@code what} names it in failures ("authentication", "the mesh handshake"). */
    public Handshake(SocketChannel channel, String what, Side side) {
        this.channel = channel;
        this.what = what;
        this.side = side;
        take(side.first());
    }

    public SocketChannel channel() { return channel; }

    /** The key on the selector, once {@link #start}ed. */
    public SelectionKey key() { return key; }

    /**
     * Attaches this handshake to the channel's key on {@code selector} (registering the channel if it has none) and
     * moves as far as it can now.
     */
    public void start(Selector selector) throws IOException {
        key = channel.keyFor(selector);
        if (key == null) {
            key = channel.register(selector, interest(), this);
        } else {
            key.attach(this);
            key.interestOps(interest());
        }
        advance();
    }

    private int interest() {
        return (in != null && in.hasRemaining() ? SelectionKey.OP_READ : 0) | (out.hasRemaining() ? SelectionKey.OP_WRITE : 0);
    }

    /** Writes and reads what it can without blocking, and takes the steps that the bytes read complete. */
    public void advance() {
        try {
            while (!finished) {
                boolean moved = false;
                if (out.hasRemaining()) moved |= channel.write(out) > 0;
                if (in != null && in.hasRemaining()) {
                    int got = channel.read(in);
                    if (got < 0) {
                        ended(null);
                        return;
                    }
                    heard |= got > 0;
                    moved |= got > 0;
                }
                if ((in == null || !in.hasRemaining()) && !step()) return;
                if (finished || !moved) break;
            }
            if (!finished && key.isValid()) key.interestOps(interest());
        } catch (IOException e) {
            ended(e);
        }
    }

    /** {@code in} is full (or only the last write is left); false when the handshake ended either way. */
    private boolean step() {
        if (in != null) {
            byte[] got = new byte[in.capacity()];
            in.flip().get(got);
            take(side.received(got));
        } else if (!out.hasRemaining()) {
            finish();
        }
        return !finished;
    }

    private void take(Step s) {
        if (s.failure() != null) {
            fail(s.failure());
            return;
        }
        out = s.send();
        in = s.expect() > 0 ? ByteBuffer.allocate(s.expect()) : null;
        if (in == null && !out.hasRemaining()) finish();
    }

    private void finish() {
        finished = true;
        side.finished(this);
    }

    private void ended(IOException cause) {
        if (!heard) {
            stop();
            if (side.endedUnanswered(this, cause)) return;
        }
        fail(cause == null ? "closed the connection during " + what : "failed during " + what + ": " + cause.getMessage());
    }

    private void fail(String why) {
        stop();
        side.failed(this, why);
    }

    private void stop() {
        finished = true;
        if (key != null) key.cancel();
    }
}
