package dev.jdist.mesh;

import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One authenticated TCP connection between two members of a {@link PeerMesh}: non-blocking, {@code TCP_NODELAY},
 * registered with the mesh's selector (interest none while no operation uses it). Each direction is one byte stream
 * with no framing (docs/reference/collectives.md §10.2): whoever runs an operation over it must know every byte count.
 */
public final class PeerConnection {
    private final SocketChannel channel;
    private final int peer;
    private final String address;
    private final boolean initiated;
    private final SelectionKey key;

    PeerConnection(SocketChannel channel, int peer, String address, boolean initiated, SelectionKey key) {
        this.channel = channel;
        this.peer = peer;
        this.address = address;
        this.initiated = initiated;
        this.key = key;
    }

    public SocketChannel channel() { return channel; }

    /** The other member's rank in the group. */
    public int peer() { return peer; }

    /** The other member's mesh address ({@code host:port}), as messages name it. */
    public String address() { return address; }

    /** True when this rank made the connection (to a higher rank), false when it accepted it. */
    public boolean initiated() { return initiated; }

    /** Its key in the mesh's selector; a transport sets the interest it waits for and clears it when done. */
    public SelectionKey key() { return key; }

    /** How messages name it: {@code rank 3 (10.0.0.3:41234, mesh connection)}. */
    public String describe() { return "rank " + peer + " (" + address + ", mesh connection)"; }

    @Override
    public String toString() { return describe(); }
}
