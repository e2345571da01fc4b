package dev.jdist.mesh;

import dev.jdist.shm.ShmLink;

import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One authenticated TCP connection between two members of a {@link PeerMesh}: non-blocking, {@code TCP_NODELAY},
 * registered with the mesh's selector (interest none while no operation uses it). Each direction is one byte stream
 * with no framing (docs/reference/collectives.md §10.2): whoever runs an operation over it must know every byte count.
 *
 * <p>Between two members on one host of a mesh over a shared-memory ring ({@code JDIST_TRANSPORT=shm}), the two byte
 * streams run through a pair of {@link ShmLink}s instead ({@link #sharedMemory()}): the socket then carries only
 * doorbell bytes (a wake-up for a side that announced it sleeps) and tells by its end that the peer is gone.
 */
public final class PeerConnection {
    private final SocketChannel channel;
    private final int peer;
    private final String address;
    private final boolean initiated;
    private final SelectionKey key;
    private final ShmLink out;
    private final ShmLink in;

    PeerConnection(SocketChannel channel, int peer, String address, boolean initiated, SelectionKey key, ShmLink out, ShmLink in) {
        this.channel = channel;
        this.peer = peer;
        this.address = address;
        this.initiated = initiated;
        this.key = key;
        this.out = out;
        this.in = in;
    }

    /** True when the byte streams run through shared memory ({@link #out()}, {@link #in()}), not the socket. */
    public boolean sharedMemory() { return out != null; }

    /** The link this member writes its stream to the peer into; null over TCP. */
    public ShmLink out() { return out; }

    /** The link this member reads the peer's stream from; null over TCP. */
    public ShmLink in() { return in; }

    public SocketChannel channel() { return channel; }

    /** The other member's rank in the group. */
    public int peer() { return peer; }

    /** The other member's mesh address ({@code host:port}), as messages name it. */
    public String address() { return address; }

    /** True when this rank made the connection (to a higher rank), false when it accepted it. */
    public boolean initiated() { return initiated; }

    /** Its key in the mesh's selector; a transport sets the interest it waits for and clears it when done. */
    public SelectionKey key() { return key; }

    /** How messages name it: {@code rank 3 (10.0.0.3:41234, mesh connection)}, {@code ..., mesh connection over shared memory)}. */
    public String describe() {
        return "rank " + peer + " (" + address + ", mesh connection" + (sharedMemory() ? " over shared memory)" : ")");
    }

    @Override
    public String toString() { return describe(); }
}
