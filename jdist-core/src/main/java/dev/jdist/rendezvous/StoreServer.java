package dev.jdist.rendezvous;

import dev.jdist.ConfigException;
import dev.jdist.spi.JobToken;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The rendezvous store rank 0 serves ({@link StoreWire} is its wire): keys and values in memory, one virtual thread
 * per connection. Strangers are refused without harm: a connection that does not start with the handshake, fails
 * the job token, sends a malformed frame or stays silent is closed and noted ({@link #notesFor}), and the store
 * keeps serving the others.
 */
final class StoreServer implements Closeable {
    /** How long a new connection may take to say hello and prove the token. */
    static final int HANDSHAKE_MILLIS = 10_000;
    /** Connections still in their handshake beyond this are refused at once (a flood of strangers). */
    static final int MAX_PENDING_HANDSHAKES = 64;
    /** Everything the store holds, at most (keys and values). */
    static final long MAX_STORED_BYTES = 256L << 20;

    private final ServerSocket server;
    private final JobToken auth;
    private final long started = System.nanoTime();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, byte[]> data = new HashMap<>();          // guarded by lock
    private long storedBytes;                                          // guarded by lock
    private boolean closed;                                            // guarded by lock
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final AtomicInteger pendingHandshakes = new AtomicInteger();
    private final Map<Integer, String> seenByRank = new TreeMap<>();   // guarded by notes
    private final Deque<String> refusals = new ArrayDeque<>();         // guarded by notes
    private final Object notes = new Object();
    private volatile String observedAddress;
    private final Thread acceptor;

    private StoreServer(ServerSocket server, String token) {
        this.server = server;
        this.auth = token == null ? null : new JobToken(token);
        this.acceptor = Thread.ofVirtual().name("jdist-store-acceptor").unstarted(this::acceptLoop);
    }

    /**
     * Serves the store on every IPv4 address of this host at {@code port}; {@code portOrigin} says where the port came
     * from (for the error when it is taken).
     */
    static StoreServer open(int port, String token, String portOrigin) {
        ServerSocket s = null;
        try {
            s = new ServerSocket();
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[4]), port), 128);
        } catch (IOException e) {
            closeQuietly(s);
            String msg = String.valueOf(e.getMessage());
            String fix = msg.toLowerCase(java.util.Locale.ROOT).contains("in use")
                    ? "another process already listens on it (another job, an earlier run of this one still ending, torch's "
                      + "own store, or a second process started as rank 0); choose a free port with JDIST_MASTER_PORT (or the "
                      + "source's port variable) on every rank"
                    : "choose another port with JDIST_MASTER_PORT";
            throw new ConfigException("rank 0 cannot serve the rendezvous store on port " + port + " (" + portOrigin + "): "
                    + msg + "; " + fix, e);
        }
        StoreServer st = new StoreServer(s, token);
        st.acceptor.start();
        return st;
    }

    int port() { return server.getLocalPort(); }

    /**
     * The address of this host that a rank on another host reached the store at (the local end of its connection), or
     * null while only ranks on this host have connected.
     */
    String observedAddress() { return observedAddress; }

    /** What the store saw of the process(es) claiming {@code rank}: connected, refused, disconnected; null if nothing. */
    String notesFor(int rank) {
        synchronized (notes) {
            return seenByRank.get(rank);
        }
    }

    /** The last connections the store refused (strangers, wrong tokens, garbage), oldest first. */
    List<String> refusals() {
        synchronized (notes) {
            return List.copyOf(refusals);
        }
    }

    // ------------------------------------------------------------------ the store itself (also used in process by rank 0)

    void set(String key, byte[] value) {
        lock.lock();
        try {
            byte[] old = data.put(key, value.clone());
            storedBytes += value.length + (old == null ? key.length() : -old.length);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    byte[] get(String key) {
        lock.lock();
        try {
            byte[] v = data.get(key);
            return v == null ? null : v.clone();
        } finally {
            lock.unlock();
        }
    }

    /** Waits until every key exists or {@code timeoutMillis} passed; returns the keys still missing. */
    List<String> await(List<String> keys, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMillis));
        lock.lock();
        try {
            while (true) {
                List<String> missing = new ArrayList<>();
                for (String k : keys) if (!data.containsKey(k)) missing.add(k);
                if (missing.isEmpty() || closed) return missing;
                long left = deadline - System.nanoTime();
                if (left <= 0) return missing;
                changed.awaitNanos(left);
            }
        } finally {
            lock.unlock();
        }
    }

    long add(String key, long delta) throws StoreWire.ProtocolException {
        lock.lock();
        try {
            byte[] old = data.get(key);
            long v = 0;
            if (old != null) {
                if (old.length != 8) throw new StoreWire.ProtocolException("ADD on key " + key + " that holds " + old.length + " bytes, not a counter");
                v = ByteBuffer.wrap(old).getLong();
            }
            v += delta;
            data.put(key, ByteBuffer.allocate(8).putLong(v).array());
            if (old == null) storedBytes += key.length() + 8;
            changed.signalAll();
            return v;
        } finally {
            lock.unlock();
        }
    }

    byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        lock.lock();
        try {
            byte[] now = data.get(key);
            boolean matches = expected == null ? now == null : now != null && Arrays.equals(now, expected);
            if (matches) {
                data.put(key, desired.clone());
                storedBytes += desired.length - (now == null ? -key.length() : now.length);
                changed.signalAll();
                return desired.clone();
            }
            return now == null ? null : now.clone();
        } finally {
            lock.unlock();
        }
    }

    private boolean full(long more) {
        lock.lock();
        try {
            return storedBytes + more > MAX_STORED_BYTES;
        } finally {
            lock.unlock();
        }
    }

    /** How many clients are connected now (rank 0's own client among them). */
    public int openConnections() {
        return connections.size();
    }

    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        closeQuietly(server);
        for (Socket s : connections) closeQuietly(s);
        acceptor.interrupt();
    }

    // ------------------------------------------------------------------ connections

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (server.isClosed()) return;
                continue;   // a connection reset before accept: keep serving
            }
            if (pendingHandshakes.incrementAndGet() > MAX_PENDING_HANDSHAKES) {
                pendingHandshakes.decrementAndGet();
                refused(s, -1, "more than " + MAX_PENDING_HANDSHAKES + " connections were still in their handshake");
                closeQuietly(s);
                continue;
            }
            connections.add(s);
            Thread.ofVirtual().name("jdist-store-" + s.getRemoteSocketAddress()).start(() -> serve(s));
        }
    }

    private void serve(Socket s) {
        String from = remote(s);
        int claimed = -1;
        boolean accepted = false;
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout(HANDSHAKE_MILLIS);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            byte[] hello = new byte[StoreWire.HELLO_BYTES];
            in.readFully(hello);
            if (!Arrays.equals(Arrays.copyOf(hello, 8), StoreWire.MAGIC)) {
                refused(s, -1, "did not start with the jdist rendezvous handshake (first bytes "
                        + printable(Arrays.copyOf(hello, 8)) + ")");
                return;
            }
            boolean clientHasToken = (hello[8] & StoreWire.FLAG_TOKEN) != 0;
            claimed = ByteBuffer.wrap(hello, 9, 4).getInt();
            byte[] nonceC = Arrays.copyOfRange(hello, 13, 13 + StoreWire.NONCE);
            note(claimed, "a process at " + from + " claiming rank " + claimed + " connected");
            byte[] nonceA = JobToken.nonce();
            byte[] proof = auth == null ? new byte[StoreWire.MAC] : auth.acceptorMac(StoreWire.AUTH_CHANNEL, nonceC, nonceA);
            out.write(StoreWire.MAGIC);
            out.writeByte(auth == null ? 0 : StoreWire.FLAG_TOKEN);
            out.write(nonceA);
            out.write(proof);
            if (clientHasToken != (auth != null)) {
                out.writeByte(auth != null ? StoreWire.REFUSED_TOKEN_REQUIRED : StoreWire.REFUSED_UNEXPECTED_TOKEN);
                out.flush();
                refused(s, claimed, auth != null ? "has no JDIST_JOB_TOKEN, but this job has one"
                        : "has a JDIST_JOB_TOKEN, but rank 0 was started without one");
                return;
            }
            out.flush();
            byte[] theirs = new byte[StoreWire.MAC];
            try {
                in.readFully(theirs);
            } catch (java.io.EOFException e) {
                // a client checks the store's proof first and leaves when it fails
                refused(s, claimed, auth != null ? "left after the store's token proof: it has a different JDIST_JOB_TOKEN (or "
                        + "is not part of this job)" : "closed the connection during the handshake");
                return;
            }
            if (auth != null && !JobToken.same(theirs, auth.connectorMac(StoreWire.AUTH_CHANNEL, nonceA, nonceC))) {
                out.writeByte(StoreWire.REFUSED_WRONG_TOKEN);
                out.flush();
                refused(s, claimed, "proved a different JDIST_JOB_TOKEN");
                return;
            }
            out.writeByte(StoreWire.ACCEPTED);
            out.flush();
            accepted = true;
            pendingHandshakes.decrementAndGet();
            noteObserved(s);
            note(claimed, "a process at " + from + " claiming rank " + claimed + " connected"
                    + (auth != null ? " and proved the job token" : ""));
            s.setSoTimeout(0);
            requests(in, out, from);
        } catch (SocketTimeoutException e) {
            if (!accepted) refused(s, claimed, "sent no complete handshake within " + HANDSHAKE_MILLIS / 1000 + " s");
        } catch (StoreWire.ProtocolException e) {
            refused(s, claimed, "sent a malformed request (" + e.getMessage() + ")");
        } catch (IOException e) {
            if (!accepted) refused(s, claimed, "closed the connection during the handshake");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (!accepted) pendingHandshakes.decrementAndGet();
            if (accepted && claimed >= 0) {
                synchronized (notes) {
                    String was = seenByRank.get(claimed);
                    if (was != null && !was.contains("disconnected")) {
                        seenByRank.put(claimed, was + ", and disconnected at " + since() + " s");
                    }
                }
            }
            connections.remove(s);
            closeQuietly(s);
        }
    }

    private void requests(DataInputStream in, DataOutputStream out, String from) throws IOException, InterruptedException {
        while (true) {
            int length;
            try {
                length = StoreWire.readFrameLength(in);
            } catch (java.io.EOFException e) {
                return;   // the client closed: normal end
            }
            byte[] frame = StoreWire.readFully(in, length);
            DataInputStream f = new DataInputStream(new ByteArrayInputStream(frame));
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            DataOutputStream r = new DataOutputStream(body);
            try {
                byte op = f.readByte();
                switch (op) {
                    case StoreWire.SET -> {
                        String key = StoreWire.readString(f);
                        byte[] value = StoreWire.readBytes(f, StoreWire.MAX_FRAME);
                        if (full(value.length)) {
                            error(r, "the rendezvous store is full (" + (MAX_STORED_BYTES >> 20) + " MiB)");
                        } else {
                            set(key, value);
                            r.writeByte(StoreWire.OK);
                        }
                    }
                    case StoreWire.GET -> {
                        byte[] v = get(StoreWire.readString(f));
                        if (v == null) {
                            r.writeByte(StoreWire.MISSING);
                        } else {
                            r.writeByte(StoreWire.VALUE);
                            StoreWire.writeBytes(r, v);
                        }
                    }
                    case StoreWire.WAIT -> {
                        List<String> keys = StoreWire.readStrings(f);
                        long ms = f.readLong();
                        List<String> missing = await(keys, ms);
                        if (missing.isEmpty()) {
                            r.writeByte(StoreWire.OK);
                        } else {
                            r.writeByte(StoreWire.TIMEOUT);
                            StoreWire.writeStrings(r, missing);
                        }
                    }
                    case StoreWire.ADD -> {
                        String key = StoreWire.readString(f);
                        long v = add(key, f.readLong());
                        r.writeByte(StoreWire.NUMBER);
                        r.writeLong(v);
                    }
                    case StoreWire.CAS -> {
                        String key = StoreWire.readString(f);
                        byte[] expected = f.readByte() != 0 ? StoreWire.readBytes(f, StoreWire.MAX_FRAME) : null;
                        byte[] desired = StoreWire.readBytes(f, StoreWire.MAX_FRAME);
                        if (full(desired.length)) {
                            error(r, "the rendezvous store is full (" + (MAX_STORED_BYTES >> 20) + " MiB)");
                        } else {
                            byte[] now = compareAndSet(key, expected, desired);
                            if (now == null) {
                                r.writeByte(StoreWire.MISSING);
                            } else {
                                r.writeByte(StoreWire.VALUE);
                                StoreWire.writeBytes(r, now);
                            }
                        }
                    }
                    case StoreWire.PING -> r.writeByte(StoreWire.OK);
                    default -> throw new StoreWire.ProtocolException("unknown request " + op);
                }
                if (f.available() > 0) throw new StoreWire.ProtocolException(f.available() + " stray bytes after request " + op);
            } catch (java.io.EOFException e) {
                throw new StoreWire.ProtocolException("a request shorter than its contents (from " + from + ")");
            }
            r.flush();
            out.writeInt(body.size());
            body.writeTo(out);
            out.flush();
        }
    }

    private static void error(DataOutputStream r, String message) throws IOException {
        r.writeByte(StoreWire.ERROR);
        StoreWire.writeString(r, message.length() > 1000 ? message.substring(0, 1000) : message);
    }

    private void noteObserved(Socket s) {
        InetAddress local = s.getLocalAddress();
        if (observedAddress == null && local instanceof Inet4Address && !local.isLoopbackAddress() && !local.isAnyLocalAddress()) {
            observedAddress = local.getHostAddress();
        }
    }

    private void note(int rank, String what) {
        if (rank < 0) return;
        synchronized (notes) {
            seenByRank.put(rank, "at " + since() + " s, " + what);
        }
    }

    private void refused(Socket s, int claimed, String why) {
        String line = "a connection from " + remote(s) + (claimed >= 0 ? " claiming rank " + claimed : "") + " " + why;
        synchronized (notes) {
            refusals.addLast(line);
            while (refusals.size() > 20) refusals.removeFirst();
            if (claimed >= 0) seenByRank.put(claimed, "at " + since() + " s, " + line);
        }
    }

    private String since() {
        return String.format(java.util.Locale.ROOT, "%.1f", (System.nanoTime() - started) / 1e9);
    }

    private static String remote(Socket s) {
        return s.getInetAddress() == null ? "?" : s.getInetAddress().getHostAddress();
    }

    private static String printable(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(x >= 32 && x < 127 ? String.valueOf((char) x) : String.format("\\x%02x", x & 0xff));
        return "\"" + sb + "\"";
    }

    static void closeQuietly(Closeable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException | RuntimeException ignored) {
            // best effort
        }
    }
}
