package dev.jdist.rendezvous;

import dev.jdist.ConfigException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.cluster.ClusterJob;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.JobToken;
import dev.jdist.spi.RankOffer;
import dev.jdist.spi.RankRecord;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The rendezvous of a job found in the environment. Rank 0 serves the store ({@link StoreServer}) on the master port;
 * every rank (rank 0 too) connects to it at the master address, publishes its record under
 * {@code jdist/rank/<r>} (claimed with compare-and-set, so a second claimant is noticed), and rank 0 judges: once
 * every rank has published, as soon as a claim arrives that no later join can fix (a second claimant of a rank, a rank
 * not below its size, a record with another world size), or at the deadline, it writes one verdict, the table or the error, under
 * {@code jdist/verdict}; every rank returns or throws exactly that. The store stays open while the group lives
 * ({@link #close}).
 */
public final class StoreRendezvous implements RendezvousSession {
    static final String RANK_KEY = "jdist/rank/";
    static final String DUP_COUNT = "jdist/dup/count";
    static final String DUP_KEY = "jdist/dup/";
    static final String VERDICT = "jdist/verdict";
    static final String VERDICT_READ = "jdist/verdict-read";
    static final String EXCHANGE = "jdist/x/";
    /** Set by a rank whose claim can never be part of the job (a second claimant, a rank not below its size): judge now. */
    static final String ALARM = "jdist/alarm";
    /** How often rank 0 looks for such a claim while it waits for the ranks. */
    static final Duration POLL = Duration.ofMillis(200);
    /** How much longer than rank 0 a rank waits for the verdict, so that rank 0's message (not a local timeout) arrives. */
    static final Duration VERDICT_GRACE = Duration.ofSeconds(15);
    /** How long rank 0 keeps a failed rendezvous open so that every rank reads the verdict. */
    static final Duration LINGER = Duration.ofSeconds(10);

    private final ClusterJob job;
    private final Map<String, String> env;
    private final Duration timeout;
    private final String token;
    private final StoreServer server;        // rank 0 only
    private final StoreClient client;        // null for a 1-process job
    private final String where;
    private final InetAddress bindAddress;
    private final String publishedHost;
    private final long judgeDeadline;
    private boolean agreed;
    private JobTable table;

    private StoreRendezvous(ClusterJob job, Map<String, String> env, Duration timeout, String token, StoreServer server,
                            StoreClient client, String where, InetAddress bindAddress, String publishedHost, long judgeDeadline) {
        this.job = job;
        this.env = Map.copyOf(env);
        this.timeout = timeout;
        this.token = token;
        this.server = server;
        this.client = client;
        this.where = where;
        this.bindAddress = bindAddress;
        this.publishedHost = publishedHost;
        this.judgeDeadline = judgeDeadline;
    }

    static StoreRendezvous open(ClusterJob job, Map<String, String> env) {
        Duration timeout = Rendezvous.timeout(env);
        String token = JobToken.in(env);
        InetAddress ifAddress = Rendezvous.interfaceAddress(env);
        String where = job.masterHost() + ":" + job.masterPort() + " (" + job.masterFrom() + ")";
        if (job.size() == 1) {
            InetAddress a = ifAddress != null ? ifAddress : InetAddress.getLoopbackAddress();
            return new StoreRendezvous(job, env, timeout, token, null, null, where, a, a.getHostAddress(), 0);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        InetAddress master = resolve(job, timeout, deadline);
        StoreServer server = job.rank() == 0 ? StoreServer.open(job.masterPort(), token, job.masterFrom()) : null;
        long judgeDeadline = System.nanoTime() + timeout.toNanos();
        StoreClient client = null;
        try {
            client = StoreClient.connect(new InetSocketAddress(master, job.masterPort()), where, token, job.rank(), deadline, timeout);
            InetAddress local = client.localAddress();
            InetAddress bind;
            String published;
            if (ifAddress != null) {
                bind = ifAddress;
                published = ifAddress.getHostAddress();
            } else if (local instanceof Inet4Address && !local.isLoopbackAddress()) {
                bind = local;
                published = local.getHostAddress();
            } else {
                // rank 0's host reached through loopback: listen everywhere, the verdict says which address the others use
                bind = InetAddress.getByAddress(new byte[4]);
                published = local.getHostAddress();
            }
            return new StoreRendezvous(job, env, timeout, token, server, client, where, bind, published, judgeDeadline);
        } catch (RuntimeException | UnknownHostException e) {
            if (client != null) client.close();
            if (server != null) server.close();
            if (e instanceof RuntimeException re) throw re;
            throw new IllegalStateException(e);
        }
    }

    /** The master host's first IPv4 address, retrying while it does not resolve (pods coming up) until the deadline. */
    private static InetAddress resolve(ClusterJob job, Duration timeout, long deadline) {
        int attempts = 0;
        long pause = 500;
        String last;
        while (true) {
            attempts++;
            try {
                for (InetAddress a : InetAddress.getAllByName(job.masterHost())) {
                    if (a instanceof Inet4Address) return a;
                }
                throw new ConfigException("rank " + job.rank() + ": the rendezvous host " + job.masterHost() + " ("
                        + job.masterFrom() + ") resolves only to IPv6 addresses; the ring is IPv4 only: give an IPv4 address "
                        + "or a name with an A record");
            } catch (UnknownHostException e) {
                String m = String.valueOf(e.getMessage());
                last = m.equals(job.masterHost()) ? "no address for " + m : m;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new ConfigException("rank " + job.rank() + ": the rendezvous host " + job.masterHost() + " ("
                        + job.masterFrom() + ") does not resolve: " + attempts + " attempt(s) over " + Rendezvous.seconds(timeout)
                        + " s, last: " + last + ". Check the name; for a Kubernetes Indexed Job it is the pod of index 0 "
                        + "through a headless Service (<job>-0.<service>), which resolves once that pod runs");
            }
            try {
                Thread.sleep(Math.min(pause, Math.max(1, left / 1_000_000)));
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new DistributedException("rank " + job.rank() + " was interrupted while resolving " + job.masterHost());
            }
            pause = Math.min(5_000, pause * 2);
        }
    }

    @Override public Optional<JobTable> table() { return Optional.ofNullable(table); }

    @Override public int rank() { return job.rank(); }

    @Override public int size() { return job.size(); }

    @Override public String description() { return job.source().description() + ", rendezvous at " + where; }

    @Override public Map<String, String> env() { return env; }

    @Override public OptionalInt localRank() { return job.localRankIfKnown(); }

    @Override public Duration timeout() { return timeout; }

    @Override public InetAddress bindAddress() { return bindAddress; }

    /** The store (null for a 1-process job): later start-up steps and jdist's services use it while the group lives. */
    StoreClient store() { return client; }

    @Override
    public JobTable agree(RankOffer offer) {
        if (agreed) throw new IllegalStateException("agree() runs once per rendezvous");
        agreed = true;
        RankRecord mine = Rendezvous.record(job.rank(), job.rankVariable(), job.size(), job.sizeVariable(), job.source().id(),
                offer, token, "", "", publishedHost);
        if (client == null) {
            if (job.problem() != null) throw new ConfigException(job.problem());
            table = new JobTable(job.source().id(), List.of(mine), null);
            return table;
        }
        byte[] json = RecordCodec.encode(mine);
        byte[] holder = client.compareAndSet(RANK_KEY + job.rank(), null, json);
        boolean claimed = Arrays.equals(holder, json);
        if (!claimed) {
            long i = client.add(DUP_COUNT, 1);
            client.set(DUP_KEY + i, json);
        }
        // the job can never form with this claim: rank 0 judges at once instead of waiting out its deadline
        if (!claimed || job.problem() != null) client.add(ALARM, 1);
        RecordCodec.Verdict verdict = server != null && claimed ? judge() : awaitVerdict();
        client.add(VERDICT_READ, 1);
        if (!verdict.ok()) {
            if (server != null && claimed) linger();
            throw "deadline".equals(verdict.kind()) ? new DeadlineExceededException(verdict.error())
                    : new ConfigException(verdict.error());
        }
        if (job.problem() != null) throw new ConfigException(job.problem());
        List<RankRecord> table = verdict.ranks();
        if (table.size() != job.size()) {
            throw new ConfigException("rank " + job.rank() + " " + mine.where() + " was started with " + job.sizeVariable() + "="
                    + job.size() + " but joined after the job had formed with " + table.size() + " ranks without it; every "
                    + "process of the job must be started with the same world size, and at the same time");
        }
        RankRecord listed = table.get(job.rank());
        if (listed.pid() != mine.pid() || !listed.bootId().equals(mine.bootId())) {
            throw new ConfigException("rank " + job.rank() + " (" + job.rankVariable() + ") is already taken in this job by "
                    + listed.where() + "; this process " + mine.where() + " was started with the same rank: each process of "
                    + "the job needs its own");
        }
        this.table = new JobTable(job.source().id(), table, client);
        return this.table;
    }

    /** Rank 0: waits for every rank's record (or the deadline), judges, publishes the verdict. */
    private RecordCodec.Verdict judge() {
        int n = job.size();
        List<String> keys = new ArrayList<>(n);
        for (int q = 0; q < n; q++) keys.add(RANK_KEY + q);
        long started = System.nanoTime();
        List<String> missing;
        boolean early = false;
        Set<String> seen = new HashSet<>();
        while (true) {
            long left = Math.max(0, judgeDeadline - System.nanoTime());
            long slice = Math.min(left, POLL.toNanos());
            missing = client.await(keys, Duration.ofNanos(slice));
            if (missing.isEmpty()) break;
            // a duplicate claim, a rank not below its size or a record with another world size: no later join can fix it
            if (client.get(ALARM).isPresent() || anotherSize(keys, missing, seen, n)) {
                early = true;
                break;
            }
            if (left <= slice) break;
        }
        List<String> malformed = new ArrayList<>();
        List<RankRecord> byRank = new ArrayList<>(n);
        int maxSize = n;
        for (int q = 0; q < n; q++) {
            String key = RANK_KEY + q;
            Optional<byte[]> v = missing.contains(key) ? Optional.empty() : client.get(key);
            RankRecord r = v.map(b -> decode(b, key, malformed)).orElse(null);
            byRank.add(r);
            if (r != null) maxSize = Math.max(maxSize, Math.min(r.size(), n + 4096));
        }
        List<RankRecord> beyond = new ArrayList<>();
        for (int q = n; q < maxSize; q++) {
            String key = RANK_KEY + q;
            client.get(key).map(b -> decode(b, key, malformed)).ifPresent(beyond::add);
        }
        List<RankRecord> duplicates = new ArrayList<>();
        long dups = client.get(DUP_COUNT).map(StoreClient::counter).orElse(0L);
        for (long i = 1; i <= Math.min(dups, 4096); i++) {
            String key = DUP_KEY + i;
            client.get(key).map(b -> decode(b, key, malformed)).ifPresent(duplicates::add);
        }
        Duration waited = early ? Duration.ofNanos(System.nanoTime() - started) : timeout;
        Optional<String> error = Agreement.judge(new Agreement.Joins(n, byRank, duplicates, beyond, !missing.isEmpty() && !early,
                waited, server::notesFor, server.refusals()));
        if (!malformed.isEmpty()) {
            String m = "the rendezvous store holds records that are not a jdist rank's (" + String.join("; ", malformed)
                    + "): something other than this job's ranks talks to it; set JDIST_JOB_TOKEN on every rank";
            error = Optional.of(error.map(e -> e + "; also: " + m).orElse(m));
        }
        RecordCodec.Verdict verdict;
        if (error.isPresent()) {
            verdict = new RecordCodec.Verdict(false, missing.isEmpty() || early ? "config" : "deadline", error.get(), List.of());
        } else {
            Agreement.Result reach = Agreement.reachable(byRank, server.observedAddress());
            verdict = reach.error() != null ? new RecordCodec.Verdict(false, "config", reach.error(), List.of())
                    : new RecordCodec.Verdict(true, "", "", reach.table());
        }
        client.set(VERDICT, RecordCodec.encode(verdict));
        return verdict;
    }

    /** Whether a record that has arrived since the last look (each is read once) was started with a size other than {@code n}. */
    private boolean anotherSize(List<String> keys, List<String> missing, Set<String> seen, int n) {
        Set<String> absent = new HashSet<>(missing);
        for (String key : keys) {
            if (absent.contains(key) || !seen.add(key)) continue;
            RankRecord r = client.get(key).map(b -> decode(b, key, new ArrayList<>())).orElse(null);
            if (r != null && r.size() != n) return true;
        }
        return false;
    }

    /** A record, or null (noted in {@code malformed}) when the bytes are not one. */
    private static RankRecord decode(byte[] json, String key, List<String> malformed) {
        try {
            RankRecord r = RecordCodec.decode(json, "record");
            if (r.host().isEmpty() || r.bootId().isEmpty() || r.backend().isEmpty()) {
                malformed.add(key + " lacks fields");
                return null;
            }
            return r;
        } catch (DistributedException e) {
            malformed.add(key + ": " + e.getMessage());
            return null;
        }
    }

    /** Every other rank (and a second claimant of rank 0): rank 0's verdict. */
    private RecordCodec.Verdict awaitVerdict() {
        Duration wait = timeout.plus(VERDICT_GRACE);
        List<String> missing = client.await(List.of(VERDICT), wait);
        if (!missing.isEmpty()) {
            throw new DeadlineExceededException("rank " + job.rank() + " joined the rendezvous at " + where + " but rank 0 gave "
                    + "no verdict within " + Rendezvous.seconds(wait) + " s; rank 0 is stopped or overloaded, see its output");
        }
        return RecordCodec.decodeVerdict(client.get(VERDICT).orElseThrow());
    }

    /**
     * Rank 0 after a failed verdict: keep the store up until every rank that joined has read it and no other rank is
     * still connected (at most {@link #LINGER}). A verdict given early (a duplicate claim) may come before a connected
     * rank has written its record: counting records alone, rank 0 closed the store under it, and that rank reported a
     * lost store instead of the verdict.
     */
    private void linger() {
        long until = System.nanoTime() + Math.min(LINGER.toNanos(), timeout.toNanos());
        long joined = 0;
        for (int q = 0; q < job.size() + 64; q++) if (client.get(RANK_KEY + q).isPresent()) joined++;
        joined += client.get(DUP_COUNT).map(StoreClient::counter).orElse(0L);
        while (System.nanoTime() < until) {
            long read = client.get(VERDICT_READ).map(StoreClient::counter).orElse(0L);
            if (read >= joined && server.openConnections() <= 1) return;   // 1: rank 0's own client
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public List<byte[]> exchange(String tag, byte[] mine) {
        if (!agreed) throw new IllegalStateException("exchange() comes after agree()");
        if (client == null) return List.of(mine.clone());
        client.set(EXCHANGE + tag + "/" + job.rank(), mine);
        List<String> keys = new ArrayList<>();
        for (int q = 0; q < job.size(); q++) keys.add(EXCHANGE + tag + "/" + q);
        List<String> missing = client.await(keys, timeout);
        if (!missing.isEmpty()) {
            List<String> ranks = missing.stream().map(k -> k.substring(k.lastIndexOf('/') + 1)).toList();
            throw new DeadlineExceededException("rank " + job.rank() + ": " + (ranks.size() == 1 ? "rank " : "ranks ")
                    + Agreement.list(ranks) + " did not publish their '" + tag + "' within " + Rendezvous.seconds(timeout)
                    + " s (JDIST_RENDEZVOUS_TIMEOUT / JDIST_TIMEOUT); see their output");
        }
        List<byte[]> out = new ArrayList<>(job.size());
        for (String k : keys) out.add(client.get(k).orElseThrow());
        return out;
    }

    /**
     * Closes the store connection; rank 0 first waits (at most {@link #LINGER}) until every rank has read a successful
     * verdict, so that closing right after the rendezvous (a hand-off) does not cut a slower rank off.
     */
    @Override
    public void close() {
        if (server != null && client != null && table != null) {
            long until = System.nanoTime() + LINGER.toNanos();
            try {
                while (System.nanoTime() < until
                        && client.get(VERDICT_READ).map(StoreClient::counter).orElse(0L) < job.size()) {
                    Thread.sleep(20);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                // the store is already unusable: nothing to wait for
            }
        }
        if (client != null) client.close();
        if (server != null) server.close();
    }
}
