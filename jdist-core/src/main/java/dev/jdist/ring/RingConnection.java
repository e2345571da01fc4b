package dev.jdist.ring;

import java.nio.channels.SocketChannel;

/**
 * One TCP connection of a formed ring, as {@link RingConnector} made it: {@code left[j]} (accepted from the
 * left neighbour on this rank's address j) or {@code right[j]} (made to the right neighbour's address j).
 * Both transports use it: {@link TcpTransport} moves the ring's bytes over it, {@link ShmTransport} keeps it
 * open as a liveness signal and doorbell.
 *
 * @param channel the connected socket
 * @param name    {@code "left[j]"} or {@code "right[j]"}, as messages name it
 * @param peer    the neighbour's rank
 * @param address the peer's hostfile address j ({@code left}: the left neighbour's own entry, where its process runs,
 *                although the connection arrived on this rank's address j; {@code right}: the right neighbour's, which the
 *                connection was made to)
 */
record RingConnection(SocketChannel channel, String name, int peer, String address) {

    /** How messages name the connection: {@code rank 1 (127.0.0.1:5000, connection left[0]<detail>)}. */
    String describe(String detail) {
        return "rank " + peer + " (" + address + ", connection " + name + detail + ")";
    }
}
