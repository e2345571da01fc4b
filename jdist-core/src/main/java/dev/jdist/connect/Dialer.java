package dev.jdist.connect;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * Connection attempts to one address, non-blocking on the caller's selector: an attempt at a time, the next one after a
 * backoff that doubles from 50 ms to 1 s. The caller's loop calls {@link #dialIfDue} and, when the selector reports the
 * key this dialer is attached to, {@link #finishConnect}; it decides when to give up (its deadline, or by throwing
 * from {@link Events#attemptFailed}).
 */
public final class Dialer {

    /** What the caller does when an attempt ends. */
    public interface Events {
        /** The connection is made ({@link Sockets#configure configured}); typically starts a {@link Handshake} on it. */
        void connected(SocketChannel channel) throws IOException;

        /** An attempt failed: its channel is closed and the next one is scheduled; log, or throw to give up. */
        void attemptFailed(IOException e);
    }

    private static final long FIRST_RETRY_MILLIS = 50;
    private static final long MAX_RETRY_MILLIS = 1000;

    private final Selector selector;
    private final InetSocketAddress address;
    private final Events events;
    private SocketChannel channel;
    private int attempts;
    private long retryAt = System.nanoTime();
    private String lastError;

    public Dialer(Selector selector, InetSocketAddress address, Events events) {
        this.selector = selector;
        this.address = address;
        this.events = events;
    }

    /** The channel of the attempt in progress, or of the one that connected; null between attempts. */
    public SocketChannel channel() { return channel; }

    /** Attempts started so far. */
    public int attempts() { return attempts; }

    /** Why the last attempt failed (the exception's message, else its class's name), or null. */
    public String lastError() { return lastError; }

    /**
     * Starts an attempt when none is in progress (nor connected) and the backoff has passed; returns the earlier of
     * {@code wake} and when the next attempt is due ({@code now} and {@code wake} are {@link System#nanoTime} values).
     * Throws only when no socket can be opened at all.
     */
    public long dialIfDue(long now, long wake) throws IOException {
        if (channel != null) return wake;
        if (now - retryAt >= 0) {
            dial();
            return wake;
        }
        return retryAt - wake < 0 ? retryAt : wake;
    }

    private void dial() throws IOException {
        attempts++;
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.INET);
        channel = ch;
        try {
            Sockets.configure(ch);
            if (ch.connect(address)) {
                events.connected(ch);
            } else {
                ch.register(selector, SelectionKey.OP_CONNECT, this);
            }
        } catch (IOException e) {
            failed(e);
        }
    }

    /** The selector reported this dialer's key: completes the connection, or counts the attempt as failed. */
    public void finishConnect() {
        try {
            if (channel.finishConnect()) events.connected(channel);
        } catch (IOException e) {
            failed(e);
        }
    }

    /**
     * The attempt failed, here or later (a handshake that learned its peer is not there yet retries as a refused
     * connection would): closes its channel and schedules the next one.
     */
    public void failed(IOException e) {
        lastError = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        Sockets.closeQuietly(channel);
        channel = null;
        long backoff = Math.min(MAX_RETRY_MILLIS, FIRST_RETRY_MILLIS << Math.min(attempts - 1, 10));
        retryAt = System.nanoTime() + backoff * 1_000_000;
        events.attemptFailed(e);
    }

    /** How long to wait in the selector until {@code wake} (a {@link System#nanoTime} value): at least 1 ms. */
    public static long millisUntil(long wake) {
        return Math.max(1, (wake - System.nanoTime() + 999_999) / 1_000_000);
    }
}
