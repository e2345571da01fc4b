package dev.jdist.ring;

import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.spi.Liveness;
import dev.jdist.spi.WatchVerdict;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;

/**
 * What both ring transports do alike: the ring's connections and the one selector that watches them, the
 * group's broken/closed state and its error messages, and the rule that any failure in the middle of an
 * operation breaks the group (docs/reference/collectives.md §3.5) — the byte streams are out of step then, so every connection is
 * closed and the neighbours fail too.
 */
abstract class RingTransportBase implements RingTransport {
    final int rank;
    final RingLog log;
    final RingConnector.Connections connections;
    final Selector selector;
    /** {@code JDIST_TIMEOUT}: the longest an operation may go without progress (longer with a liveness watch). */
    volatile long timeoutNanos;
    /** {@link #timeoutNanos} as messages say it, in seconds. */
    volatile String timeoutText;
    /** The liveness watch's verdict, when every member is jdist and the watch ended the group from its own thread. */
    private final WatchVerdict watch = new WatchVerdict();
    /** Where the ranks listen, for the host of a lost peer. */
    private final RingHostfile hostfile;
    /** Said after the connection in messages: "" for TCP, ", shared memory" for shm. */
    private final String connectionDetail;
    private volatile DistributedException broken;
    volatile boolean closed;

    RingTransportBase(RingSettings settings, RingConnector.Connections connections, RingLog log, String connectionDetail)
            throws IOException {
        this.rank = settings.rank();
        this.hostfile = settings.hostfile();
        this.connections = connections;
        this.log = log;
        this.timeoutNanos = settings.timeout().toNanos();
        this.timeoutText = RingConnector.seconds(settings.timeout());
        this.connectionDetail = connectionDetail;
        this.selector = Selector.open();
    }

    /** Registers {@code c}'s socket, non-blocking, with this transport's selector. */
    final SelectionKey register(RingConnection c, int ops, Object attachment) throws IOException {
        c.channel().configureBlocking(false);
        return c.channel().register(selector, ops, attachment);
    }

    /** How messages name connection {@code c} (peer rank, address, {@code left[j]}/{@code right[j]}). */
    final String describe(RingConnection c) { return c.describe(connectionDetail); }

    /**
     * Every member is jdist and the job's liveness watch runs (docs/reliability.md): operations wait for progress up to
     * its deadline (30 min unless {@code JDIST_TIMEOUT} is set), and a failure the watch finds anywhere in the job ends
     * the group at once ({@link #abort}).
     */
    final void useLiveness(Liveness liveness) {
        this.timeoutNanos = liveness.progressDeadline().toNanos();
        this.timeoutText = RingConnector.seconds(liveness.progressDeadline());
        watch.listen(liveness, this::abort);
    }

    /** The progress deadline from now on (a group that may hold MLX peers, once connected: docs/reliability.md). */
    final void useProgressDeadline(java.time.Duration deadline) {
        this.timeoutNanos = deadline.toNanos();
        this.timeoutText = RingConnector.seconds(deadline);
    }

    /**
     * Ends the group now, from another thread (the liveness watch): marks it broken, closes its connections (so the
     * neighbours notice too) and wakes an operation asleep in the selector, which then fails with the watch's error.
     */
    private void abort(DistributedException cause) {
        if (closed) return;
        breakGroup(cause);
        selector.wakeup();
    }

    /** Throws the watch's error when it ended the group; called where a waiting operation would otherwise sleep. */
    final void checkAborted() { watch.check(); }

    /** Runs the transfer's streams (at least one). Failures propagate. */
    abstract void execute(Transfer transfer);

    /** Frees what the transport holds besides the connections and the selector (called once, by {@link #close()}). */
    void release() {}

    @Override
    public final void checkUsable(String opName) {
        DistributedException b = broken;
        if (b != null) {
            String msg = "rank " + rank + ": " + opName + " cannot run: the ring group broke earlier: " + b.getMessage();
            if (b instanceof DeadlineExceededException) throw new DeadlineExceededException(msg, b);
            throw new PeerLostException(msg, b);
        }
        if (closed) throw new IllegalStateException("rank " + rank + ": " + opName + " on a closed ring group");
    }

    @Override
    public final void run(Transfer t) {
        checkUsable(t.opName());
        if (t.streams().isEmpty()) return;
        try {
            checkOneStreamPerSocket(t.streams());
            execute(t);
        } catch (DistributedException e) {
            watch.failing(e);   // the peers hear why before they see the connections close
            breakGroup(e);
            throw watch.explain(e);   // when the watch closed the connections, its error says why
        } catch (RuntimeException | Error e) {
            // the watch closed the connections under the operation (a cancelled key, a closed selector): its error says why
            DistributedException w = watch.cause(e);
            if (w != null) throw w;
            // anything unexpected mid-operation leaves the byte streams out of step: the group cannot go on
            breakGroup(new PeerLostException("rank " + rank + ": " + t.opName() + " failed unexpectedly (" + e
                    + "); the ring's byte streams are out of step, so the group is closed", e));
            throw e;
        }
    }

    /** What the transports rely on and the schedules guarantee: no two streams send, or receive, on one connection. */
    private static void checkOneStreamPerSocket(List<RingSchedule.Stream> streams) {
        for (int i = 1; i < streams.size(); i++) {
            RingSchedule.Stream a = streams.get(i);
            for (int j = 0; j < i; j++) {
                RingSchedule.Stream b = streams.get(j);
                if (a.connection() != b.connection() || a.sendOnLeft() != b.sendOnLeft()) continue;
                if (!a.sends().isEmpty() && !b.sends().isEmpty()) {
                    throw new IllegalStateException("two streams send on " + (a.sendOnLeft() ? "left[" : "right[")
                            + a.connection() + "]");
                }
                if (!a.recvs().isEmpty() && !b.recvs().isEmpty()) {
                    throw new IllegalStateException("two streams receive on " + (a.sendOnLeft() ? "right[" : "left[")
                            + a.connection() + "]");
                }
            }
        }
    }

    /** A lost connection, named: this rank, the operation, the peer and its address, the direction, the cause. */
    final PeerLostException lostConnection(String opName, RingConnection c, String direction, String why, Throwable cause) {
        // a reset (RST), unlike EOF, means the peer's socket was closed with bytes still unread in it: a process killed
        // while stopped or busy, or a group that its own failure closed in the middle of an operation
        String reset = why != null && why.toLowerCase(java.util.Locale.ROOT).contains("reset")
                ? " (a reset, not an orderly close: rank " + c.peer() + "'s end was closed with bytes it had not read, as when "
                  + "a process is killed while stopped or busy)" : "";
        return new PeerLostException("rank " + rank + ": " + opName + " lost the connection to " + describe(c)
                + " while " + direction + ": " + why + reset + ". Rank " + c.peer() + " probably exited or "
                + "crashed (or a rank further round the ring did, and its failure travelled here); check its output. "
                + "The group is closed.", cause, rank, c.peer(), hostfile.addresses(c.peer()).getFirst().host(), opName);
    }

    /**
     * No progress for the deadline: what the operation's {@code streams} were waiting for and what the peer may
     * be ({@code peerStates}, e.g. "hung, stopped, or").
     */
    final DeadlineExceededException noProgress(String opName, List<? extends StreamCursor> streams, String peerStates) {
        List<String> waiting = new ArrayList<>();
        for (StreamCursor r : streams) {
            if (r.recvConnection() != null && !r.recvDone()) {
                waiting.add("receiving " + r.recvRemaining() + " more byte(s) from " + describe(r.recvConnection()));
            }
            if (r.sendConnection() != null && !r.sendDone() && r.sendBlocked) {
                waiting.add("sending " + r.sendRemaining() + " more byte(s) to " + describe(r.sendConnection())
                        + ", which stopped reading");
            }
        }
        return new DeadlineExceededException("rank " + rank + ": " + opName + " made no progress for " + timeoutText
                + " s (JDIST_TIMEOUT) while " + String.join("; ", waiting) + ". The peer may be " + peerStates
                + " running a different sequence of operations; raise JDIST_TIMEOUT if it is just slow. "
                + "The group is closed.", null, rank, opName, java.time.Duration.ofNanos(timeoutNanos));
    }

    /** An operation interrupted half-way: the byte streams are out of step. */
    final PeerLostException interrupted(String opName) {
        return new PeerLostException("rank " + rank + ": " + opName + " was interrupted in the middle of the "
                + "operation; the ring's byte streams are now out of step, so the group is closed");
    }

    /** The selector failed (or was closed under the operation). */
    final PeerLostException selectorFailed(String opName, Exception e) {
        if (closed) return new PeerLostException("rank " + rank + ": " + opName + " failed: the ring group was closed", e);
        return new PeerLostException("rank " + rank + ": " + opName + " failed: " + e, e);
    }

    @Override
    public final void breakGroup(DistributedException e) {
        if (broken == null) broken = e;
        log.log("group broken: " + e.getMessage());
        connections.closeAll();
    }

    @Override
    public final void close() {
        if (closed) return;
        closed = true;
        connections.closeAll();
        RingConnector.closeQuietly(selector);
        release();
    }
}
