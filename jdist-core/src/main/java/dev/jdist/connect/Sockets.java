package dev.jdist.connect;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/** The socket steps the ring's connector and the peer mesh take alike. */
public final class Sockets {

    private Sockets() {}

    /**
     * A non-blocking IPv4 listener bound to {@code address} (SO_REUSEADDR but not SO_REUSEPORT, so that a second process
     * on the same address is detected); nothing is left open when binding fails.
     */
    public static ServerSocketChannel listen(InetSocketAddress address, int backlog) throws IOException {
        ServerSocketChannel ch = null;
        try {
            ch = ServerSocketChannel.open(StandardProtocolFamily.INET);
            ch.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ch.bind(address, backlog);
            ch.configureBlocking(false);
            return ch;
        } catch (IOException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    /**
     * The next connection waiting on {@code listener}, {@link #configure configured}, or null when none waits. A
     * connection that fails at once (its caller gave up: reset) is closed and passed over.
     */
    public static SocketChannel acceptNext(ServerSocketChannel listener) throws IOException {
        while (true) {
            SocketChannel ch = listener.accept();
            if (ch == null) return null;
            try {
                configure(ch);
                return ch;
            } catch (IOException e) {
                closeQuietly(ch);
            }
        }
    }

    /** Non-blocking, TCP_NODELAY: every connection a handshake runs on. */
    public static void configure(SocketChannel ch) throws IOException {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    /** Closes {@code c} if there is one; closing is best effort. */
    public static void closeQuietly(Closeable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // closing is best effort
        }
    }
}
