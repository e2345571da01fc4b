package dev.jdist.jaccl;

import dev.jdist.ConnectFailedException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.PeerLostException;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The default JACCL side channel [wire] (docs/reference/collectives.md §4.2): a TCP star through rank 0.
 * Rank 0 listens on the coordinator address and accepts {@code n-1} connections, each of which
 * first sends its rank as a 4-byte little-endian integer; the others connect with up to four
 * attempts (1, 2, 4, 8 s apart). All-gather: rank q > 0 writes its bytes and reads everything;
 * rank 0 reads ranks 1..n-1 in order, then writes the whole buffer to 1..n-1 in order.
 *
 * <p>jdist additions that change no byte: every wait is bounded by {@code JDIST_TIMEOUT}
 * (set-up as a whole, and each read of an exchange), and errors name the rank, the peer and the address.
 */
public final class TcpSideChannel implements SideChannel {
    /** MLX's retry schedule for rank q > 0: sleeps after failed attempts 1..4. */
    static final long[] RETRY_SLEEPS_MS = {1000, 2000, 4000, 8000};

    private final int rank;
    private final int size;
    private final String coordinator;
    private final Duration timeout;
    /** Rank 0: sockets of ranks 1..n-1 at index rank; others: one socket to rank 0 at index 0. */
    private final Socket[] peers;
    private volatile boolean closed;

    private TcpSideChannel(int rank, int size, String coordinator, Duration timeout, Socket[] peers) {
        this.rank = rank;
        this.size = size;
        this.coordinator = coordinator;
        this.timeout = timeout;
        this.peers = peers;
    }

    /**
     * Connects the side channel. {@code log} receives MLX-style retry lines (stderr in production).
     *
     * @throws ConnectFailedException when the coordinator cannot be reached or cannot listen
     * @throws DeadlineExceededException when set-up takes longer than {@code timeout}
     */
    public static TcpSideChannel connect(int rank, int size, String host, int port, Duration timeout, Consumer<String> log) {
        if (size < 1 || rank < 0 || rank >= size) throw new IllegalArgumentException("rank " + rank + " of " + size);
        String address = host + ":" + port;
        long deadline = System.nanoTime() + timeout.toNanos();
        return rank == 0 ? accept(size, host, port, address, timeout, deadline)
                : dial(rank, size, host, port, address, timeout, deadline, log);
    }

    private static TcpSideChannel accept(int size, String host, int port, String address, Duration timeout, long deadline) {
        Socket[] peers = new Socket[size];
        if (size == 1) return new TcpSideChannel(0, 1, address, timeout, peers);
        ServerSocket server = null;
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            if (server.supportedOptions().contains(StandardSocketOptions.SO_REUSEPORT)) {
                server.setOption(StandardSocketOptions.SO_REUSEPORT, true);
            }
            try {
                server.bind(new InetSocketAddress(host, port), size);
            } catch (IOException e) {
                throw new ConnectFailedException("JACCL rank 0 cannot listen on the coordinator address " + address + " ("
                        + e.getMessage() + "); MLX_JACCL_COORDINATOR must be an address of rank 0's host and the port must be free", e);
            }
            int accepted = 0;
            while (accepted < size - 1) {
                long left = remainingMillis(deadline);
                if (left <= 0) throw setupTimeout(peers, size, address, timeout);
                server.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
                Socket s;
                try {
                    s = server.accept();
                } catch (SocketTimeoutException e) {
                    throw setupTimeout(peers, size, address, timeout);
                }
                s.setTcpNoDelay(true);
                s.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, remainingMillis(deadline))));
                int claimed;
                try {
                    claimed = ByteBuffer.wrap(s.getInputStream().readNBytes(4)).order(ByteOrder.LITTLE_ENDIAN).getInt();
                } catch (IOException | java.nio.BufferUnderflowException e) {
                    s.close();
                    continue; // a connection that never said its rank (a port scan, a dying process): ignore it
                }
                if (claimed < 1 || claimed >= size) {
                    s.close();
                    throw new ConnectFailedException("JACCL rank 0 (" + address + "): a process at " + s.getRemoteSocketAddress()
                            + " says it is rank " + claimed + " but the group has ranks 0.." + (size - 1)
                            + "; check MLX_RANK and the device file of that process");
                }
                if (peers[claimed] != null) {
                    s.close();
                    throw new ConnectFailedException("JACCL rank 0 (" + address + "): two processes claim rank " + claimed + " ("
                            + peers[claimed].getRemoteSocketAddress() + " and " + s.getRemoteSocketAddress()
                            + "); give every process its own MLX_RANK");
                }
                s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
                peers[claimed] = s;
                accepted++;
            }
            return new TcpSideChannel(0, size, address, timeout, peers);
        } catch (IOException e) {
            closeAll(peers);
            throw new ConnectFailedException("JACCL rank 0 side channel on " + address + " failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeAll(peers);
            throw e;
        } finally {
            if (server != null) {
                try {
                    server.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
    }

    private static DeadlineExceededException setupTimeout(Socket[] peers, int size, String address, Duration timeout) {
        TreeSet<Integer> missing = new TreeSet<>();
        for (int q = 1; q < size; q++) if (peers[q] == null) missing.add(q);
        closeAll(peers);
        return new DeadlineExceededException("JACCL rank 0 waited " + human(timeout) + " (JDIST_TIMEOUT) on " + address
                + " for rank(s) " + missing + " to connect; are they running, with MLX_JACCL_COORDINATOR=" + address
                + " and reachable from there?");
    }

    private static TcpSideChannel dial(int rank, int size, String host, int port, String address, Duration timeout,
                                       long deadline, Consumer<String> log) {
        IOException last = null;
        for (int attempt = 0; attempt <= RETRY_SLEEPS_MS.length; attempt++) {
            long left = remainingMillis(deadline);
            if (left <= 0) break;
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), (int) Math.min(Integer.MAX_VALUE, left));
                s.setTcpNoDelay(true);
                s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
                s.getOutputStream().write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(rank).array());
                s.getOutputStream().flush();
                Socket[] peers = new Socket[1];
                peers[0] = s;
                return new TcpSideChannel(rank, size, address, timeout, peers);
            } catch (IOException e) {
                last = e;
                try {
                    s.close();
                } catch (IOException ignored) {
                    // already failing
                }
                if (attempt == RETRY_SLEEPS_MS.length) break;
                long sleep = Math.min(RETRY_SLEEPS_MS[attempt], remainingMillis(deadline));
                if (sleep <= 0) break;
                log.accept("[jaccl] rank " + rank + ": connecting to the coordinator " + address + " failed (" + e.getMessage()
                        + "); retrying in " + sleep + " ms");
                try {
                    Thread.sleep(sleep);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new ConnectFailedException("interrupted while connecting to the JACCL coordinator " + address, ie);
                }
            }
        }
        throw new ConnectFailedException("JACCL rank " + rank + " could not connect to the coordinator (rank 0) at " + address
                + (last == null ? "" : " (" + last.getMessage() + ")") + " within " + human(timeout)
                + "; is rank 0 running, is MLX_JACCL_COORDINATOR right, and is the port open?", last);
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    /** The coordinator address this channel used. */
    public String coordinator() { return coordinator; }

    @Override
    public synchronized byte[] allGather(byte[] src) {
        int b = src.length;
        byte[] all = new byte[size * b];
        System.arraycopy(src, 0, all, rank * b, b);
        if (size == 1) return all;
        if (closed) throw new PeerLostException("JACCL rank " + rank + ": the side channel is closed");
        if (rank == 0) {
            for (int q = 1; q < size; q++) readFully(q, all, q * b, b);
            for (int q = 1; q < size; q++) write(q, all);
        } else {
            write(0, src);
            readFully(0, all, 0, all.length);
        }
        return all;
    }

    private Socket socketOf(int peer) { return rank == 0 ? peers[peer] : peers[0]; }

    private String describe(int peer) {
        Socket s = socketOf(peer);
        return "rank " + peer + " (" + (s.getRemoteSocketAddress() == null ? coordinator : s.getRemoteSocketAddress()) + ")";
    }

    private void readFully(int peer, byte[] into, int off, int len) {
        try {
            InputStream in = socketOf(peer).getInputStream();
            int done = 0;
            while (done < len) {
                int r = in.read(into, off + done, len - done);
                if (r < 0) throw new EOFException();
                done += r;
            }
        } catch (SocketTimeoutException e) {
            throw new DeadlineExceededException("JACCL rank " + rank + ": no side-channel data from " + describe(peer) + " for "
                    + human(timeout) + " (JDIST_TIMEOUT); is that rank still running the same program?", e);
        } catch (IOException e) {
            throw new PeerLostException("JACCL rank " + rank + ": the side-channel connection to " + describe(peer)
                    + " was lost (" + (e instanceof EOFException ? "closed by the peer" : e.getMessage()) + ")", e);
        }
    }

    private void write(int peer, byte[] bytes) {
        try {
            OutputStream out = socketOf(peer).getOutputStream();
            out.write(bytes);
            out.flush();
        } catch (IOException e) {
            throw new PeerLostException("JACCL rank " + rank + ": sending on the side channel to " + describe(peer)
                    + " failed (" + e.getMessage() + ")", e);
        }
    }

    /** The open sockets, for a watcher that detects a peer closing its side channel. */
    List<Socket> sockets() {
        List<Socket> out = new ArrayList<>();
        for (Socket s : peers) if (s != null) out.add(s);
        return out;
    }

    @Override
    public void close() {
        closed = true;
        closeAll(peers);
    }

    private static void closeAll(Socket[] sockets) {
        for (Socket s : sockets) {
            if (s == null) continue;
            try {
                s.close();
            } catch (IOException ignored) {
                // best effort
            }
        }
    }

    private static long remainingMillis(long deadline) {
        return (deadline - System.nanoTime()) / 1_000_000;
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? (ms / 1000) + " s" : ms + " ms";
    }
}
