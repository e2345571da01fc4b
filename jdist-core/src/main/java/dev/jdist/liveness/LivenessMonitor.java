package dev.jdist.liveness;

import dev.jdist.CollectiveMismatchException;
import dev.jdist.ConfigException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.OperationFingerprint;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.Liveness;
import dev.jdist.spi.RankRecord;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The liveness watch of one job (docs/reliability.md, docs/reference/collectives.md §11): one thread and one UDP socket
 * per world group, between jdist ranks only. Every rank sends every other rank a small authenticated datagram ten times
 * per {@code JDIST_HEARTBEAT} (1 s by default) saying that its process is alive, what its group is doing (the running and
 * the last finished operation's {@link OperationFingerprint}) and, once its group broke, why. From them each rank
 * concludes on its own, so that every rank reports within the bound:
 * <ul>
 *   <li>a peer heard from for 80 % of the bound is declared lost ({@link PeerUnresponsiveException}; on this host,
 *       {@code /proc} says whether it exited or is stopped);</li>
 *   <li>a rank whose group broke says why at once, and a rank whose group broke because a neighbour closed its
 *       connections follows those reasons back to where the failure began, so every rank names the same lost rank;</li>
 *   <li>two ranks known to have called different collectives at the same collective number fail every rank with
 *       {@link CollectiveMismatchException};</li>
 *   <li>an operation waiting for more than a minute is reported once, naming the ranks not in it and what they do.</li>
 * </ul>
 * Any failure ends every group of the job on this rank ({@link #onFailure} listeners, the backends' abort). Nothing of
 * this touches the backends' connections: MLX peers (which never join a watch) see no new bytes.
 *
 * <p>Start-up: {@link #open} binds the socket, {@link #record()} is what this rank contributes to an all-gather over the
 * new group, {@link #start} reads everyone's records (the heartbeat and debug settings must agree) and starts the thread.
 */
public final class LivenessMonitor implements Liveness, AutoCloseable {
    /** How long an operation waits before its rank reports, once, which ranks it waits for. */
    static final Duration WAIT_REPORT = Duration.ofMinutes(1);
    public static final int RECORD_BYTES = HeartbeatWire.RECORD_BYTES;

    private final int rank;
    private final int size;
    private final JobTable table;
    private final LivenessSettings settings;
    private final LocalActivity activity;
    private final long incarnation;
    private final DatagramSocket socket;          // null when the heartbeat is off
    private final HeartbeatWire wire;
    private final long waitReportNanos;
    private final Peer[] peers;
    private final AtomicLong sequence = new AtomicLong();
    private final List<Consumer<DistributedException>> listeners = new ArrayList<>();   // guarded by this
    private final Set<DistributedException> made = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
    private InetSocketAddress[] addresses;
    private Thread thread;
    private Thread shutdownHook;
    private volatile boolean closed;
    /** The first reason the job broke, as this rank learnt it (its own failure, a declaration, a peer's notice). */
    private volatile Reason declared;
    /** Why this rank's own group broke, first-hand; advertised in heartbeats. */
    private volatile Reason own;
    private volatile Map<Integer, OperationFingerprint> mismatchCalls = Map.of();
    /** How many times the watch's thread found its socket empty (a receive timed out): everything queued before was read. */
    private volatile long emptyReceives;
    private long reportedWait = -1;                 // watch thread only
    private long mismatchSeen;                      // watch thread only: when a mismatch was first seen, or 0
    private final List<SplitGroup> splits = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** A group made by {@code split} on this rank: its heartbeat section, mismatch check and long-wait report. */
    private static final class SplitGroup {
        final String label;
        final int id;                 // the label's hash: the same on every member, carried in heartbeats
        final int[] members;          // job ranks, by rank in the group
        final LocalActivity activity;
        long reportedWait = -1;       // watch thread only
        long mismatchSeen;            // watch thread only

        SplitGroup(String label, int[] members, LocalActivity activity) {
            this.label = label;
            this.id = label.hashCode();
            this.members = members.clone();
            this.activity = activity;
        }
    }

    /** What this rank knows of one peer; written by the watch's thread, read by any. */
    private static final class Peer {
        volatile long heardNanos;
        long sequence = -1;
        long incarnation;
        volatile OperationFingerprint running;
        volatile OperationFingerprint last;
        volatile List<OperationFingerprint> recent = List.of();
        volatile long sinceMs;
        volatile List<HeartbeatWire.SplitActivity> splits = List.of();   // what its latest heartbeat said of groups made by split
        /** The last recent-collectives list its heartbeats carried of each split group this rank is in (beats take turns). */
        final Map<Integer, List<OperationFingerprint>> splitRecent = new java.util.concurrent.ConcurrentHashMap<>();
        volatile boolean left;
        volatile Reason notice;
        volatile boolean declaredLost;
    }

    private LivenessMonitor(int rank, JobTable table, LivenessSettings settings, LocalActivity activity, String token,
                            DatagramSocket socket, Duration waitReport) {
        this.rank = rank;
        this.size = table.size();
        this.table = table;
        this.settings = settings;
        this.activity = activity;
        this.incarnation = new SecureRandom().nextLong();
        this.socket = socket;
        this.wire = new HeartbeatWire(HeartbeatWire.key(token, table));
        this.waitReportNanos = waitReport.toNanos();
        this.peers = new Peer[size];
        for (int q = 0; q < size; q++) peers[q] = new Peer();
    }

    /**
     * Prepares the watch of rank {@code rank} of the job {@code table} describes: binds its UDP socket (any address, a
     * port the system picks) unless the heartbeat is off. {@code token} is {@code JDIST_JOB_TOKEN} (or null).
     */
    public static LivenessMonitor open(int rank, JobTable table, LivenessSettings settings, LocalActivity activity, String token) {
        return open(rank, table, settings, activity, token, WAIT_REPORT);
    }

    static LivenessMonitor open(int rank, JobTable table, LivenessSettings settings, LocalActivity activity, String token,
                                Duration waitReport) {
        DatagramSocket socket = null;
        if (settings.watching()) {
            try {
                socket = new DatagramSocket(new InetSocketAddress(0));
            } catch (SocketException e) {
                throw new ConfigException("rank " + rank + " cannot open the UDP socket of the liveness watch: " + e.getMessage()
                        + "; set " + LivenessSettings.HEARTBEAT + "=off to run without it", e);
            }
        }
        return new LivenessMonitor(rank, table, settings, activity, token, socket, waitReport);
    }

    /** This rank's {@value #RECORD_BYTES}-byte record for the start-up all-gather. */
    public byte[] record() {
        long ms = settings.watching() ? settings.heartbeat().toMillis() : 0;
        return HeartbeatWire.record(socket == null ? 0 : socket.getLocalPort(), ms, settings.watching(), settings.detail(), incarnation);
    }

    /**
     * Reads every rank's record (rank order, {@value #RECORD_BYTES} bytes each) and starts the heartbeat. The settings
     * must agree across ranks; otherwise the same {@link ConfigException} on every rank, naming the values.
     */
    public void start(byte[] allRecords) {
        List<HeartbeatWire.Record> records = new ArrayList<>();
        for (int q = 0; q < size; q++) {
            HeartbeatWire.Record r = HeartbeatWire.readRecord(allRecords, q);
            if (r == null) {
                throw new ConfigException("rank " + q + " " + table.rank(q).where() + " sent no liveness record when the group was "
                        + "formed: every rank of a job must run the same jdist release");
            }
            records.add(r);
        }
        agree(records, r -> r.heartbeat() ? LivenessSettings.seconds(Duration.ofMillis(r.heartbeatMillis())) : "off",
                LivenessSettings.HEARTBEAT);
        agree(records, r -> r.detail() ? "detail" : "not detail", LivenessSettings.DEBUG);
        if (socket == null) return;
        addresses = new InetSocketAddress[size];
        for (int q = 0; q < size; q++) {
            if (q == rank) continue;
            String host = table.rank(q).host();
            try {
                addresses[q] = new InetSocketAddress(InetAddress.getByName(host), records.get(q).port());
            } catch (IOException e) {
                throw new ConfigException("rank " + q + " published the address \"" + host + "\", which is not an IPv4 address", e);
            }
            peers[q].incarnation = records.get(q).incarnation();
        }
        long now = System.nanoTime();
        for (Peer p : peers) p.heardNanos = now;
        thread = Thread.ofPlatform().daemon().name("jdist-liveness-rank-" + rank).priority(Thread.MAX_PRIORITY).unstarted(this::loop);
        shutdownHook = Thread.ofPlatform().unstarted(this::sendLeave);
        try {
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            shutdownHook = null;   // the JVM is exiting already
        }
        thread.start();
    }

    private void agree(List<HeartbeatWire.Record> records, java.util.function.Function<HeartbeatWire.Record, String> value,
                       String variable) {
        Map<String, List<Integer>> byValue = new LinkedHashMap<>();
        for (int q = 0; q < records.size(); q++) byValue.computeIfAbsent(value.apply(records.get(q)), v -> new ArrayList<>()).add(q);
        if (byValue.size() == 1) return;
        List<String> parts = new ArrayList<>();
        byValue.forEach((v, ranks) -> parts.add(Diagnosis.ranks(ranks) + ": " + v));
        throw new ConfigException("the ranks of this job disagree on " + variable + " (" + String.join("; ", parts) + "); give "
                + "every rank the same value (or leave it unset on all)");
    }

    // ------------------------------------------------------------------ Liveness, for the backends

    @Override
    public DistributedException failure() {
        Reason d = declared;
        if (d == null) return null;
        return made(exceptionFor(resolve(d).root, null, null));
    }

    @Override
    public void onFailure(Consumer<DistributedException> action) {
        synchronized (this) {
            if (declared == null) {
                listeners.add(action);
                return;
            }
        }
        action.accept(failure());
    }

    @Override
    public Duration progressDeadline() { return settings.progressDeadline(); }

    @Override
    public boolean hasLeft(int q) { return q >= 0 && q < size && q != rank && peers[q].left; }

    /** Whether the heartbeat runs (else only the settings and the detail check). */
    public boolean watching() { return socket != null; }

    /** {@code JDIST_DEBUG=detail}, as every rank agreed. */
    public boolean detail() { return settings.detail(); }

    /** This rank's number in the job (the world group). */
    public int rank() { return rank; }

    /**
     * Reports and checks a group made by {@code split} as the world group's operations are: its operations go into the
     * heartbeats (one such group per beat: the one whose operation has waited longest, else the one used last), ranks
     * compare its collectives, and a long wait in it is reported. {@code label} is the group's name, the same on every
     * member; {@code members} its members' job ranks by rank in the group; {@code activity} its operation queue.
     */
    public void watchSplit(String label, int[] members, LocalActivity activity) {
        if (socket != null) splits.add(new SplitGroup(label, members, activity));
    }

    /** The group made by {@code split} whose queue is {@code activity} closed: no more reports of it. */
    public void forgetSplit(LocalActivity activity) {
        for (SplitGroup s : splits) {
            if (s.activity != activity) continue;
            splits.remove(s);
            if (!watchesSplit(s.id)) for (Peer p : peers) p.splitRecent.remove(s.id);
        }
    }

    /** A view for groups made by {@code split}: the same failures, but its ranks are not the job's, so nobody has left. */
    public Liveness forSplit() {
        LivenessMonitor m = this;
        return new Liveness() {
            @Override public DistributedException failure() { return m.failure(); }
            @Override public void failing(DistributedException local) { m.failing(local); }
            @Override public void onFailure(Consumer<DistributedException> action) { m.onFailure(action); }
            @Override public Duration progressDeadline() { return m.progressDeadline(); }
            @Override public boolean hasLeft(int q) { return false; }
        };
    }

    // ------------------------------------------------------------------ failures of this rank's groups

    /**
     * A transport's own failure, told before it closes its connections: the peers that then see them close learn why
     * from this rank's heartbeat (sent now) instead of taking this rank for where the failure began.
     */
    @Override
    public void failing(DistributedException local) {
        if (socket == null || made.contains(local) || declared != null) return;
        Reason mine = Reason.ofOwnFailure(rank, local);
        if (mine == null) return;
        synchronized (this) {
            if (own != null) return;
            own = mine;
        }
        sendBeats(BEAT_NOW);
    }

    /**
     * What to throw for {@code local}, a failure that ended one of this rank's operations: for a failure that breaks the
     * group (a lost connection, a deadline) this rank first tells the others why, then waits briefly (two heartbeat
     * intervals at most) for the reasons that explain it — a failure that travelled round the ring from a rank that died
     * is reported as that rank's loss. Errors that leave the group usable, and failures the watch raised itself, come
     * back unchanged.
     */
    public DistributedException explain(DistributedException local) {
        if (socket == null || made.contains(local)) return local;
        Reason mine = Reason.ofOwnFailure(rank, local);
        if (mine == null) return local;
        Reason before = declared;
        if (before == null) {
            // a first-hand failure (told already if the transport called failing()): end this rank's other groups
            synchronized (this) {
                if (own == null) own = mine;
            }
            declare(own);
        }
        Reason start = before != null ? before : own;
        long began = System.nanoTime();
        long until = began + settings.grace().toNanos();
        long exitedSince = 0;
        long emptyAtExit = 0;
        while (true) {
            Resolution r = resolve(start);
            long now = System.nanoTime();
            if (!r.exited) exitedSince = 0;
            else if (exitedSince == 0) {
                exitedSince = now;
                emptyAtExit = emptyReceives;   // read after the exit was seen
            }
            // the exited peer sent its reason (if any) before it exited: once the watch has read its socket empty since
            // then, a reason still missing was never sent; a starved watch thread is waited for, up to the grace
            boolean settled = r.exited && now - exitedSince >= EXITED_SETTLE && emptyReceives > emptyAtExit;
            if (r.definitive || settled || now - until >= 0 || closed) {
                if (r.root.kind() == Reason.Kind.FAILED && r.root.origin() == rank) return local;
                return made(exceptionFor(r.root, local, local.operation().orElse(null)));
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return local;
            }
        }
    }

    /**
     * Declares a mismatch found by the group's own check ({@code JDIST_DEBUG=detail}): every group of the job ends, as
     * for any failure. Returns the exception to throw.
     */
    public DistributedException mismatch(Map<Integer, OperationFingerprint> calls, String note) {
        Reason r = Reason.mismatch(rank, Diagnosis.mismatchText(calls) + note);
        mismatchCalls = Map.copyOf(calls);
        if (socket != null) {
            synchronized (this) {
                if (own == null) own = r;
            }
            declare(r);
            sendBeats(BEAT_NOW);
        }
        return made(exceptionFor(r, null, null));
    }

    private DistributedException made(DistributedException e) {
        made.add(e);
        return e;
    }

    /**
     * {@code exited}: the chain ends at a peer on this host that has exited without a reason heard from it yet. A rank
     * that failed sends its reason before it exits, so that reason may still be on its way to the watch's thread; it is
     * waited for at least {@link #EXITED_SETTLE} and until the watch's thread has read its socket empty since the exit was
     * seen (a loaded machine may take that long to hand a datagram to the watch) before the exited peer is named (a
     * SIGKILLed one never sends any).
     */
    private record Resolution(Reason root, boolean definitive, boolean exited) {
        Resolution(Reason root, boolean definitive) { this(root, definitive, false); }
    }

    /** How long an exited peer's reason is waited for before the peer itself is named as where the failure began. */
    private static final long EXITED_SETTLE = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(500);

    /**
     * Follows lost connections back to where the failure began: a rank that lost its connection to {@code s} because
     * {@code s} broke its group has {@code s}'s reason; a rank that sent no reason and exited, left, or is the end of a
     * cycle is where it began. Not definitive while the last rank of the chain may still send its reason.
     */
    private Resolution resolve(Reason start) {
        Reason cur = start;
        Set<Integer> seen = new HashSet<>();
        while (cur.kind() == Reason.Kind.CONNECTION) {
            int s = cur.subject();
            if (s < 0 || s >= size || !seen.add(s)) return new Resolution(cur, true);
            // this rank: why its groups broke, first-hand or as it learnt it (the reason it acted on)
            Reason next = s == rank ? (own != null ? own : declared) : peers[s].notice;
            if (next != null && next != cur) {
                cur = next;
                continue;
            }
            if (s == rank) return new Resolution(cur, true);
            if (s != rank && peers[s].left) return new Resolution(Reason.left(s), true);
            if (sameHost(s) && ProcessProbe.state(table.rank(s).pid()) == PeerUnresponsiveException.State.EXITED) {
                return new Resolution(new Reason(Reason.Kind.CONNECTION, cur.origin(), s, PeerUnresponsiveException.State.EXITED, 0,
                        "", cur.text()), false, true);
            }
            return new Resolution(cur, false);
        }
        return new Resolution(cur, true);
    }

    /** The first failure of the job as this rank knows it: every group of the job on this rank ends. */
    private void declare(Reason r) {
        List<Consumer<DistributedException>> toRun;
        synchronized (this) {
            if (declared != null) return;
            declared = r;
            toRun = new ArrayList<>(listeners);
            listeners.clear();
        }
        if (r.origin() == rank && r.kind() != Reason.Kind.CONNECTION && r.kind() != Reason.Kind.FAILED) {
            System.err.println("jdist " + exceptionFor(r, null, null).getMessage());
        }
        // Tell the others why before the listeners close this rank's connections: a peer that then sees them close
        // follows this reason on to where the failure began, instead of taking this rank for the origin.
        sendBeats(BEAT_NOW);
        for (Consumer<DistributedException> l : toRun) {
            try {
                l.accept(failure());
            } catch (RuntimeException e) {
                // aborting a group is best effort; its own operation reports the failure
            }
        }
    }

    private DistributedException exceptionFor(Reason root, DistributedException cause, String operation) {
        String me = "rank " + rank + ": ";
        String closedNote = " The job's groups are closed on every rank.";
        int s = root.subject();
        int o = root.origin();
        switch (root.kind()) {
            case SILENT -> {
                Duration silence = Duration.ofMillis(root.silenceMs());
                String bound = " (" + LivenessSettings.HEARTBEAT + "=" + LivenessSettings.seconds(settings.heartbeat()) + ")";
                if (s == rank) {
                    return new PeerUnresponsiveException(me + "the other ranks declared this rank lost: rank " + o + " " + where(o)
                            + " heard nothing from it for " + LivenessSettings.seconds(silence) + bound + ". This process was "
                            + "probably stopped (SIGSTOP, a debugger) or starved of CPU long enough for the others to give up."
                            + closedNote, cause, rank, s, where(s), operation, root.state(), silence, o);
                }
                return new PeerUnresponsiveException(me + "rank " + s + " " + where(s) + " stopped answering: no heartbeat for "
                        + LivenessSettings.seconds(silence) + bound + "; " + root.state().meaning() + "."
                        + (o == rank ? "" : " Rank " + o + " declared it lost.") + closedNote,
                        cause, rank, s, where(s), operation, root.state(), silence, o);
            }
            case LEFT -> {
                return new PeerLostException(me + "rank " + s + " " + where(s) + " closed its group (its program finished or called "
                        + "close()) while this rank still needed it: every rank must issue the same operations." + closedNote,
                        cause, rank, s, where(s), operation);
            }
            case CONNECTION -> {
                if (s == rank) {
                    // the search came back here: rank o saw its connection to this rank close, and no earlier cause is known
                    return new PeerLostException(me + "rank " + o + " " + where(o) + " lost its connection to this rank (" + root.text()
                            + ") and no earlier cause of the failure is known here; check rank " + o + "'s output." + closedNote,
                            cause, rank, o, where(o), operation);
                }
                boolean exited = root.state() == PeerUnresponsiveException.State.EXITED;
                String seen = o == rank ? "this rank" : "rank " + o;
                return new PeerLostException(me + "rank " + s + " " + where(s) + (exited ? " has exited" : " is gone") + ": " + seen
                        + " lost its connection to it (" + root.text() + ")" + (exited ? "" : "; it sent no word of a failure of its "
                        + "own, so it probably crashed, was killed, or its host or network went down") + "." + closedNote,
                        cause, rank, s, where(s), operation);
            }
            case MISMATCH -> {
                return new CollectiveMismatchException(me + "the ranks called different operations at the same point: " + root.text()
                        + ". Every rank must issue the same collectives (operation, dtype and shape) in the same order, and each "
                        + "send must meet a recv of the same dtype and size." + closedNote, cause, rank,
                        operation, o == rank ? mismatchCalls : Map.of());
            }
            default -> {
                String text = me + "rank " + o + " " + where(o) + " failed first (" + root.errorClass() + "): " + root.text();
                if (root.errorClass().equals(DeadlineExceededException.class.getSimpleName())) {
                    return new DeadlineExceededException(text + closedNote, cause, rank, operation, null);
                }
                return new PeerLostException(text + closedNote, cause, rank, o, where(o), operation);
            }
        }
    }

    private String where(int q) {
        return q >= 0 && q < size ? table.rank(q).where() : "";
    }

    private boolean sameHost(int q) {
        RankRecord a = table.rank(rank);
        RankRecord b = table.rank(q);
        return table.sameHost(rank, q) && a.hostname().equals(b.hostname());
    }

    // ------------------------------------------------------------------ the watch's thread

    private static final long BEAT_NOW = -1;

    private void loop() {
        long interval = settings.interval().toNanos();
        long limit = settings.silenceLimit().toNanos();
        long next = System.nanoTime();
        long last = next;
        byte[] buf = new byte[HeartbeatWire.MAX_DATAGRAM + 100];
        DatagramPacket packet = new DatagramPacket(buf, buf.length);
        while (!closed) {
            long now = System.nanoTime();
            if (now - last > interval + limit / 4) {
                // this thread did not run for a long time (the process was stopped or starved): the silence is ours,
                // not the peers'; give every peer a new full window before judging
                for (Peer p : peers) p.heardNanos = Math.max(p.heardNanos, now);
            }
            last = now;
            if (now - next >= 0) {
                sendBeats(now);
                next = now + interval;
            }
            checkPeers(now, limit);
            checkActivity(now);
            try {
                socket.setSoTimeout((int) Math.max(1, Math.min(next - now, interval / 2) / 1_000_000));
                packet.setLength(buf.length);
                socket.receive(packet);
                handle(wire.decode(buf, packet.getLength()), System.nanoTime());
            } catch (SocketTimeoutException e) {
                emptyReceives++;   // only this thread writes it; time to send or check
            } catch (IOException e) {
                if (closed) return;
                sleepQuietly(interval / 10);
            } catch (RuntimeException e) {
                if (closed) return;
                System.err.println("jdist rank " + rank + ": the liveness watch ignored a datagram it could not read: " + e);
            }
        }
    }

    private void handle(HeartbeatWire.Beat beat, long now) {
        if (beat == null || beat.rank() < 0 || beat.rank() >= size || beat.rank() == rank) return;
        Peer p = peers[beat.rank()];
        if (beat.incarnation() != p.incarnation || beat.sequence() <= p.sequence) return;   // another job's, or replayed
        p.sequence = beat.sequence();
        p.heardNanos = now;
        if (beat.type() == HeartbeatWire.LEAVE) {
            p.left = true;
            return;
        }
        p.running = beat.running();
        p.last = beat.last();
        p.recent = beat.recent();
        p.sinceMs = beat.sinceMs();
        p.splits = beat.splits();
        for (HeartbeatWire.SplitActivity a : beat.splits()) {
            if (!a.recent().isEmpty() && watchesSplit(a.group())) p.splitRecent.put(a.group(), a.recent());
        }
        Reason r = beat.reason();
        if (r != null) {
            p.notice = r;
            if (declared == null) declare(r);
        }
    }

    private void checkPeers(long now, long limit) {
        for (int q = 0; q < size; q++) {
            Peer p = peers[q];
            if (q == rank || p.left || p.declaredLost) continue;
            long silence = now - p.heardNanos;
            if (silence <= limit) continue;
            p.declaredLost = true;
            PeerUnresponsiveException.State state = sameHost(q) ? ProcessProbe.state(table.rank(q).pid())
                    : PeerUnresponsiveException.State.UNKNOWN;
            Reason r = Reason.silent(rank, q, state, TimeUnit.NANOSECONDS.toMillis(silence));
            synchronized (this) {
                if (own == null) own = r;
            }
            declare(r);
            sendBeats(BEAT_NOW);
        }
    }

    /** Ranks known to have called different collectives; an operation that has waited long, reported once. */
    private void checkActivity(long now) {
        OperationFingerprint running = activity.running();
        OperationFingerprint finished = activity.lastCompleted();
        if (declared == null) {
            Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
            known.put(rank, withRecent(running, finished, activity.recentCollectives()));
            for (int q = 0; q < size; q++) if (q != rank) known.put(q, withRecent(peers[q].running, peers[q].last, peers[q].recent));
            mismatchSeen = judgeMismatch(known, size, mismatchSeen, now, "");
        }
        if (running != null && running.sequence() != reportedWait && now - activity.changedAtNanos() > waitReportNanos
                && declared == null) {
            reportedWait = running.sequence();
            List<Diagnosis.Seen> seen = new ArrayList<>();
            for (int q = 0; q < size; q++) {
                if (q == rank) continue;
                Peer p = peers[q];
                long heard = TimeUnit.NANOSECONDS.toMillis(now - p.heardNanos);
                HeartbeatWire.SplitActivity inSplit = runningSplit(p, null);
                if (p.running == null && inSplit != null) {
                    seen.add(new Diagnosis.Seen(q, where(q), null, null, heard, 0, p.left, inSplitGroup(inSplit, "a", heard)));
                } else {
                    seen.add(new Diagnosis.Seen(q, where(q), p.running, p.last, heard, p.sinceMs, p.left));
                }
            }
            System.err.println(Diagnosis.waitReport(rank, running, TimeUnit.NANOSECONDS.toMillis(now - activity.changedAtNanos()),
                    seen, LivenessSettings.seconds(settings.progressDeadline())));
        }
        for (SplitGroup s : splits) checkSplit(s, now);
    }

    /** The same for a group made by split: its members' calls as their heartbeats report them, and its long waits. */
    private void checkSplit(SplitGroup s, long now) {
        if (declared != null) return;
        OperationFingerprint running = s.activity.running();
        Map<Integer, List<OperationFingerprint>> known = new TreeMap<>();
        known.put(rank, withRecent(running, s.activity.lastCompleted(), s.activity.recentCollectives()));
        for (int q : s.members) {
            if (q == rank) continue;
            HeartbeatWire.SplitActivity a = splitOf(peers[q], s.id);
            List<OperationFingerprint> recent = peers[q].splitRecent.getOrDefault(s.id, List.of());
            if (a != null || !recent.isEmpty()) known.put(q, withRecent(a == null ? null : a.running(), a == null ? null : a.last(), recent));
        }
        String ranks = Arrays.stream(s.members).mapToObj(Integer::toString).collect(java.util.stream.Collectors.joining(", "));
        s.mismatchSeen = judgeMismatch(known, s.members.length, s.mismatchSeen, now, " (in group " + s.label + " of job ranks " + ranks + ")");
        if (declared != null) return;
        if (running == null || running.sequence() == s.reportedWait || now - s.activity.changedAtNanos() <= waitReportNanos) return;
        s.reportedWait = running.sequence();
        List<Diagnosis.Seen> seen = new ArrayList<>();
        for (int q : s.members) {
            if (q == rank) continue;
            Peer p = peers[q];
            long heard = TimeUnit.NANOSECONDS.toMillis(now - p.heardNanos);
            HeartbeatWire.SplitActivity a = splitOf(p, s.id);
            if (a != null) seen.add(new Diagnosis.Seen(q, where(q), a.running(), a.last(), heard, a.sinceMs(), p.left));
            else seen.add(new Diagnosis.Seen(q, where(q), null, null, heard, 0, p.left, elsewhere(p, s.id, heard)));
        }
        int peer = !running.isCollective() && running.peer() >= 0 && running.peer() < s.members.length ? s.members[running.peer()] : -1;
        System.err.println(Diagnosis.waitReport(rank, s.label, peer, running, TimeUnit.NANOSECONDS.toMillis(now - s.activity.changedAtNanos()),
                seen, LivenessSettings.seconds(settings.progressDeadline())));
    }

    /** What a peer does outside the group made by split whose id is {@code group}, as its heartbeat says. */
    private static String elsewhere(Peer p, int group, long heardMs) {
        OperationFingerprint worldRunning = p.running;
        HeartbeatWire.SplitActivity other = runningSplit(p, group);
        if (worldRunning != null) {
            return "in " + worldRunning.describe() + " of the world group for " + Diagnosis.seconds(p.sinceMs + heardMs);
        }
        if (other != null) return inSplitGroup(other, "another", heardMs);
        return p.last == null ? "no operation of the world group yet" : "idle since the world group's " + p.last.describe() + " ended";
    }

    private boolean watchesSplit(int group) {
        for (SplitGroup s : splits) if (s.id == group) return true;
        return false;
    }

    /** The peer's report of the group made by split whose id is {@code group}, or null when its heartbeat carried none. */
    private static HeartbeatWire.SplitActivity splitOf(Peer p, int group) {
        for (HeartbeatWire.SplitActivity a : p.splits) if (a.group() == group) return a;
        return null;
    }

    /** The first group made by split (other than {@code except}'s id, if given) in which the peer's heartbeat says it waits. */
    private static HeartbeatWire.SplitActivity runningSplit(Peer p, Integer except) {
        for (HeartbeatWire.SplitActivity a : p.splits) if (a.running() != null && (except == null || a.group() != except)) return a;
        return null;
    }

    private static String inSplitGroup(HeartbeatWire.SplitActivity a, String which, long heardMs) {
        return "in " + a.running().describe() + " of " + which + " group made by split, for " + Diagnosis.seconds(a.sinceMs() + heardMs);
    }

    /**
     * Declares a mismatch among a group's {@code known} calls once it has been seen for 1.5 heartbeat intervals or every
     * one of the {@code groupSize} ranks has reported that collective (a complete message); returns when it was first
     * seen (0: none now), which the caller keeps for its next check.
     */
    private long judgeMismatch(Map<Integer, List<OperationFingerprint>> known, int groupSize, long seenAt, long now, String where) {
        Diagnosis.Mismatch found = Diagnosis.mismatch(known, false);
        if (found == null) return 0;
        if (seenAt == 0) return now;   // wait a moment for the other ranks' reports of this collective, for a complete message
        if (found.calls().size() == groupSize || now - seenAt > settings.interval().toNanos() * 3 / 2) {
            mismatch(found.calls(), found.note() + where);
        }
        return seenAt;
    }

    /**
     * The groups made by split this rank's heartbeat reports, most urgent first: those with a running operation, the
     * longest waiting first, then the others, the one used last first (a datagram carries as many as fit).
     */
    private List<HeartbeatWire.SplitActivity> splitsToReport(long now) {
        if (splits.isEmpty()) return List.of();
        record Snapshot(SplitGroup group, boolean running, long changed) {}
        List<Snapshot> all = new ArrayList<>(splits.size());
        for (SplitGroup s : splits) all.add(new Snapshot(s, s.activity.running() != null, s.activity.changedAtNanos()));
        all.sort((a, b) -> a.running() != b.running() ? (a.running() ? -1 : 1)
                : a.running() ? Long.compare(a.changed() - b.changed(), 0) : Long.compare(b.changed() - a.changed(), 0));
        List<HeartbeatWire.SplitActivity> report = new ArrayList<>(all.size());
        for (Snapshot x : all) {
            LocalActivity a = x.group().activity;
            report.add(new HeartbeatWire.SplitActivity(x.group().id, (int) Math.min(Integer.MAX_VALUE,
                    TimeUnit.NANOSECONDS.toMillis(now - x.changed())), a.running(), a.lastCompleted(), a.recentCollectives()));
        }
        return report;
    }

    private static List<OperationFingerprint> withRecent(OperationFingerprint running, OperationFingerprint last,
                                                        List<OperationFingerprint> recent) {
        List<OperationFingerprint> all = new ArrayList<>(recent.size() + 2);
        all.add(running);
        all.add(last);
        all.addAll(recent);
        return all;
    }

    /** A heartbeat to every peer that has not left: alive, what this rank does, why its group broke (if it did). */
    private void sendBeats(long now) {
        if (socket == null || addresses == null) return;
        long t = now == BEAT_NOW ? System.nanoTime() : now;
        Reason r = own != null ? own : declared;
        byte[] bytes = wire.encode(new HeartbeatWire.Beat(HeartbeatWire.BEAT, rank, incarnation, sequence.incrementAndGet(),
                (int) Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(t - activity.changedAtNanos())),
                activity.running(), activity.lastCompleted(), activity.recentCollectives(), splitsToReport(t), r));
        sendToAll(bytes);
    }

    private void sendToAll(byte[] bytes) {
        for (int q = 0; q < size; q++) {
            if (q == rank || addresses[q] == null || peers[q].left) continue;
            try {
                socket.send(new DatagramPacket(bytes, bytes.length, addresses[q]));
            } catch (IOException e) {
                // a partitioned network (EPERM, unreachable): the peers' silence tells them; nothing to do here
            }
        }
    }

    /** Tells every peer that this rank closed its group (twice: datagrams may be lost). */
    private void sendLeave() {
        if (socket == null || addresses == null || socket.isClosed()) return;
        for (int i = 0; i < 2; i++) {
            sendToAll(wire.encode(new HeartbeatWire.Beat(HeartbeatWire.LEAVE, rank, incarnation, sequence.incrementAndGet(), 0,
                    null, null, null, null, null)));
        }
    }

    private static void sleepQuietly(long nanos) {
        try {
            Thread.sleep(Duration.ofNanos(Math.max(1_000_000, nanos)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Says goodbye to the peers (so that nobody mistakes the end of this rank for a failure), stops the thread. */
    @Override
    public void close() {
        if (closed) return;
        sendLeave();
        closed = true;
        if (socket != null) socket.close();
        if (thread != null) {
            try {
                thread.join(Duration.ofSeconds(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException ignored) {
                // the JVM is exiting: the hook runs or ran
            }
        }
    }

    /** Stops the heartbeat without a goodbye, as if the process had been killed (tests and the chaos suite). */
    public void stopWithoutGoodbye() {
        closed = true;
        if (socket != null) socket.close();
    }
}
