package dev.jdist.rendezvous;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.spi.JobToken;
import dev.jdist.spi.KeyValueStore;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * One rank's connection to the rendezvous store ({@link StoreWire}). Connecting retries until the deadline (rank 0
 * may start later); every request is bounded; a lost store is a {@link DistributedException} naming it.
 */
final class StoreClient implements KeyValueStore, Closeable {
    private static final long FIRST_RETRY_MILLIS = 100;
    private static final long MAX_RETRY_MILLIS = 1000;
    /** Extra time a request waits for the store's answer beyond the time the request itself may take. */
    private static final int ANSWER_MARGIN_MILLIS = 30_000;

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final String where;
    private final int rank;

    private StoreClient(Socket socket, String where, int rank) throws IOException {
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        this.where = where;
        this.rank = rank;
    }

    /**
     * Connects to the store at {@code target} ({@code where} names it in messages: {@code node0:29500 (MASTER_ADDR,
     * MASTER_PORT)}) and proves {@code token} (null: none), retrying refused connections until {@code deadlineNanos}.
     */
    static StoreClient connect(InetSocketAddress target, String where, String token, int rank, long deadlineNanos,
                               Duration timeout) {
        int attempts = 0;
        String last = null;
        long retry = FIRST_RETRY_MILLIS;
        while (true) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new ConnectFailedException("rank " + rank + " found no rendezvous store at " + where + " within "
                        + Rendezvous.seconds(timeout) + " s (" + attempts + " attempt(s), last: " + last + "). Rank 0 serves it: "
                        + "is rank 0 running, and does the address name rank 0's host and a port it can serve on?");
            }
            attempts++;
            Socket s = new Socket();
            try {
                s.connect(target, (int) Math.max(1, Math.min(5_000, left / 1_000_000)));
            } catch (IOException e) {
                StoreServer.closeQuietly(s);
                last = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
                sleep(Math.min(retry, Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000)), rank);
                retry = Math.min(MAX_RETRY_MILLIS, retry * 2);
                continue;
            }
            try {
                StoreClient c = new StoreClient(s, where, rank);
                if (c.handshake(token, rank, deadlineNanos)) return c;
            } catch (IOException e) {
                last = "the handshake failed: " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
            } catch (RuntimeException e) {
                StoreServer.closeQuietly(s);
                throw e;
            }
            // rank 0's store was not ready yet (or restarted): try again
            StoreServer.closeQuietly(s);
            sleep(Math.min(retry, Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000)), rank);
            retry = Math.min(MAX_RETRY_MILLIS, retry * 2);
        }
    }

    /** True when accepted; false when the store closed early (worth another try); throws when it is not our store. */
    private boolean handshake(String token, int claimedRank, long deadlineNanos) throws IOException {
        socket.setTcpNoDelay(true);
        socket.setSoTimeout((int) Math.max(1, Math.min(StoreServer.HANDSHAKE_MILLIS + 5_000,
                (deadlineNanos - System.nanoTime()) / 1_000_000 + 1_000)));
        JobToken auth = token == null ? null : new JobToken(token);
        byte[] nonceC = JobToken.nonce();
        out.write(StoreWire.MAGIC);
        out.writeByte(auth == null ? 0 : StoreWire.FLAG_TOKEN);
        out.writeInt(claimedRank);
        out.write(nonceC);
        out.flush();
        byte[] welcome = new byte[StoreWire.WELCOME_BYTES];
        try {
            in.readFully(welcome);
        } catch (java.io.EOFException e) {
            return false;
        }
        if (!Arrays.equals(Arrays.copyOf(welcome, 8), StoreWire.MAGIC)) {
            throw new ConnectFailedException("rank " + rank + ": something other than a jdist rendezvous store answers at " + where
                    + " (it sent " + Arrays.toString(Arrays.copyOf(welcome, 8)) + "); another program uses that port: choose "
                    + "another one with JDIST_MASTER_PORT (or the source's port variable) on every rank");
        }
        boolean storeHasToken = (welcome[8] & StoreWire.FLAG_TOKEN) != 0;
        if (storeHasToken != (auth != null)) {
            throw new ConfigException(storeHasToken
                    ? "rank " + rank + ": rank 0's rendezvous store at " + where + " requires the job token, but this process "
                      + "has no JDIST_JOB_TOKEN; give every rank of the job the same JDIST_JOB_TOKEN"
                    : "rank " + rank + " has a JDIST_JOB_TOKEN but rank 0's rendezvous store at " + where + " was started "
                      + "without one; give every rank of the job the same JDIST_JOB_TOKEN (or none)");
        }
        byte[] nonceA = Arrays.copyOfRange(welcome, 9, 9 + StoreWire.NONCE);
        byte[] proof = Arrays.copyOfRange(welcome, 9 + StoreWire.NONCE, StoreWire.WELCOME_BYTES);
        if (auth != null && !JobToken.same(proof, auth.acceptorMac(StoreWire.AUTH_CHANNEL, nonceC, nonceA))) {
            throw new ConfigException("rank " + rank + ": the rendezvous store at " + where + " proved a different job token: "
                    + "this process's JDIST_JOB_TOKEN differs from rank 0's (or another job serves that port); give every rank "
                    + "of the job the same JDIST_JOB_TOKEN");
        }
        out.write(auth == null ? new byte[StoreWire.MAC] : auth.connectorMac(StoreWire.AUTH_CHANNEL, nonceA, nonceC));
        out.flush();
        int verdict = in.read();
        if (verdict == StoreWire.ACCEPTED) {
            socket.setSoTimeout(0);
            return true;
        }
        if (verdict == StoreWire.REFUSED_WRONG_TOKEN) {
            throw new ConfigException("rank " + rank + ": rank 0's rendezvous store at " + where + " refused this process's job "
                    + "token: its JDIST_JOB_TOKEN differs from rank 0's; give every rank of the job the same JDIST_JOB_TOKEN");
        }
        if (verdict < 0) return false;
        throw new ConnectFailedException("rank " + rank + ": the rendezvous store at " + where + " refused the connection (code "
                + verdict + ")");
    }

    // ------------------------------------------------------------------ requests

    @Override
    public void set(String key, byte[] value) {
        expect(request(0, o -> {
            o.writeByte(StoreWire.SET);
            StoreWire.writeString(o, key);
            StoreWire.writeBytes(o, value);
        }), StoreWire.OK, "SET " + key);
    }

    @Override
    public Optional<byte[]> get(String key) {
        Answer a = request(0, o -> {
            o.writeByte(StoreWire.GET);
            StoreWire.writeString(o, key);
        });
        if (a.status == StoreWire.MISSING) return Optional.empty();
        expect(a, StoreWire.VALUE, "GET " + key);
        return Optional.of(a.bytes());
    }

    @Override
    public List<String> await(List<String> keys, Duration timeout) {
        long ms = Math.max(0, timeout.toMillis());
        Answer a = request(ms, o -> {
            o.writeByte(StoreWire.WAIT);
            StoreWire.writeStrings(o, keys);
            o.writeLong(ms);
        });
        if (a.status == StoreWire.OK) return List.of();
        expect(a, StoreWire.TIMEOUT, "WAIT");
        try {
            return StoreWire.readStrings(a.body);
        } catch (IOException e) {
            throw lost(e);
        }
    }

    @Override
    public long add(String key, long delta) {
        Answer a = request(0, o -> {
            o.writeByte(StoreWire.ADD);
            StoreWire.writeString(o, key);
            o.writeLong(delta);
        });
        expect(a, StoreWire.NUMBER, "ADD " + key);
        try {
            return a.body.readLong();
        } catch (IOException e) {
            throw lost(e);
        }
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        Answer a = request(0, o -> {
            o.writeByte(StoreWire.CAS);
            StoreWire.writeString(o, key);
            o.writeByte(expected == null ? 0 : 1);
            if (expected != null) StoreWire.writeBytes(o, expected);
            StoreWire.writeBytes(o, desired);
        });
        if (a.status == StoreWire.MISSING) return null;
        expect(a, StoreWire.VALUE, "CAS " + key);
        return a.bytes();
    }

    /** The local end of this connection: the address of the interface that routes to rank 0. */
    java.net.InetAddress localAddress() { return socket.getLocalAddress(); }

    /** A round trip that proves the store is there. */
    void ping() {
        expect(request(0, o -> o.writeByte(StoreWire.PING)), StoreWire.OK, "PING");
    }

    @Override
    public void close() {
        StoreServer.closeQuietly(socket);
    }

    private interface Body {
        void write(DataOutputStream o) throws IOException;
    }

    private record Answer(byte status, DataInputStream body) {
        byte[] bytes() {
            try {
                return StoreWire.readBytes(body, StoreWire.MAX_FRAME);
            } catch (IOException e) {
                throw new DistributedException("a malformed answer from the rendezvous store: " + e.getMessage(), e);
            }
        }
    }

    /** One request; the answer must come within {@code extraMillis} plus a margin. */
    private synchronized Answer request(long extraMillis, Body body) {
        try {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            DataOutputStream o = new DataOutputStream(buf);
            body.write(o);
            o.flush();
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, extraMillis + ANSWER_MARGIN_MILLIS));
            out.writeInt(buf.size());
            buf.writeTo(out);
            out.flush();
            int n = StoreWire.readFrameLength(in);
            DataInputStream a = new DataInputStream(new ByteArrayInputStream(StoreWire.readFully(in, n)));
            return new Answer(a.readByte(), a);
        } catch (SocketTimeoutException e) {
            throw new DeadlineExceededException("rank " + rank + ": the rendezvous store at " + where + " did not answer within "
                    + (extraMillis + ANSWER_MARGIN_MILLIS) / 1000 + " s; rank 0 (which serves it) is stopped or unreachable", e);
        } catch (IOException e) {
            throw lost(e);
        }
    }

    private void expect(Answer a, byte status, String what) {
        if (a.status == status) return;
        if (a.status == StoreWire.ERROR) {
            String msg;
            try {
                msg = StoreWire.readString(a.body);
            } catch (IOException e) {
                msg = "(unreadable)";
            }
            throw new DistributedException("rank " + rank + ": the rendezvous store at " + where + " refused " + what + ": " + msg);
        }
        throw new DistributedException("rank " + rank + ": the rendezvous store at " + where + " answered " + what
                + " with status " + a.status);
    }

    private DistributedException lost(IOException e) {
        return new DistributedException("rank " + rank + " lost its connection to the rendezvous store at " + where + " ("
                + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()) + "): rank 0, which serves it, "
                + "ended or failed; see rank 0's output", e);
    }

    private static void sleep(long millis, int rank) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DistributedException("rank " + rank + " was interrupted while looking for the rendezvous store");
        }
    }

    static long counter(byte[] value) {
        return ByteBuffer.wrap(value).getLong();
    }
}
