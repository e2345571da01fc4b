package dev.jdist;

import dev.jdist.cluster.ClusterJob;
import dev.jdist.cluster.JobDiscovery;
import dev.jdist.cluster.JobEvidence;
import dev.jdist.cluster.JobSource;
import dev.jdist.flight.OperationTrace;
import dev.jdist.rendezvous.GroupAgreement;
import dev.jdist.rendezvous.Rendezvous;
import dev.jdist.rendezvous.RendezvousSession;
import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JdistTimeout;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.JobToken;
import dev.jdist.spi.RankOffer;

import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * Entry point: forms this process's group with one of the backends (docs/reference/collectives.md §2),
 * caching one group per backend name exactly as MLX does.
 */
public final class Distributed {

    /** The order {@code "any"} tries backends in (MLX's order). */
    static final List<String> ANY_ORDER = List.of("nccl", "ring", "mpi", "jaccl");
    static final List<String> VALID_NAMES = List.of("any", "ring", "jaccl", "mpi", "nccl");
    /** The backend {@code init()} (backend {@code "any"}) uses instead of trying them in order. */
    public static final String BACKEND_VARIABLE = "JDIST_BACKEND";
    /** How many times {@code jdist launch --max-restarts} has started this job again: 0 on the first start. */
    public static final String RESTART_VARIABLE = "JDIST_RESTART";

    private static final Map<String, Group> CACHE = new HashMap<>();
    private static Map<String, Backend> backends;      // null until first use; guarded by the class lock

    private Distributed() {}

    /**
     * The restart number of this job ({@code JDIST_RESTART}, set by {@code jdist launch --max-restarts}): 0 on the
     * first start and when the variable is unset, 1 after the first restart, and so on.
     */
    public static int restartNumber() {
        return restartNumber(System.getenv());
    }

    /** {@link #restartNumber()} as {@code env} says it. */
    public static int restartNumber(Map<String, String> env) {
        String v = env.get(RESTART_VARIABLE);
        if (v == null || v.isBlank()) return 0;
        try {
            int n = Integer.parseInt(v.strip());
            if (n >= 0) return n;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new ConfigException(RESTART_VARIABLE + "='" + v + "' is not a restart number (0 or more); jdist launch sets it, "
                + "unset it when starting ranks another way");
    }

    /** {@code init(false, "any")}: a real group if any backend is configured, otherwise the 1-rank group. */
    public static Group init() { return init(false, "any"); }

    /** {@code init(false, backend)}. */
    public static Group init(String backend) { return init(false, backend); }

    public static Group init(boolean strict, String backend) {
        return init(strict, backend, System.getenv());
    }

    /**
     * As {@link #init(boolean, String)}, reading {@code env} instead of the process environment (for
     * tests and embedding). Caching follows docs/reference/collectives.md §2.3 exactly:
     * <ol>
     *   <li>an unknown name fails before the cache is consulted;</li>
     *   <li>a cached name returns its group whatever {@code strict} is;</li>
     *   <li>a real group is cached under its backend's name and under {@code "any"} unless
     *       {@code "any"} is already taken (the first success wins {@code "any"} for good);</li>
     *   <li>a non-strict failure caches the 1-rank group under the name tried last (for
     *       {@code "any"}: {@code "jaccl"}, never {@code "any"}); a strict failure caches nothing.</li>
     * </ol>
     * A backend that finds its configuration but fails to start throws whatever {@code strict} is.
     *
     * <p>The job is found in the environment in the order of docs/clusters.md ({@link JobDiscovery}): the backends'
     * own MLX variables first, exactly as before; otherwise a job found from jdist, torchrun, Trainer v2, MPI-launcher,
     * Slurm or Kubernetes variables meets through the rendezvous store and the backend forms its group from the agreed
     * table. {@code JDIST_BACKEND} stands in for {@code "any"}. Under {@code "any"} an MPI launcher's job stays an
     * MPI job (as before); name the ring (or set {@code JDIST_BACKEND=ring}) to use the launcher only to start
     * processes. A process whose environment describes a job of several processes never falls back to the 1-rank
     * group: when no backend forms the group, that is a {@link ConfigException} naming what was found.
     */
    public static synchronized Group init(boolean strict, String backend, Map<String, String> env) {
        if (backend == null || !VALID_NAMES.contains(backend)) {
            throw new IllegalArgumentException("unknown distributed backend '" + backend + "'; valid backends: "
                    + String.join(", ", VALID_NAMES));
        }
        Group cached = CACHE.get(backend);
        if (cached != null) return cached;

        String chosen = chosenBackend(backend, env);
        boolean any = chosen.equals("any");
        JobDiscovery.Finding finding;
        ConfigException rendezvousProblem = null;
        try {
            finding = JobDiscovery.inspect(env);
        } catch (ConfigException e) {
            // the MPI backend forms an MPI launcher's job without the rendezvous, so what only the rendezvous needs
            // (rank 0's host, when the ranks span hosts) is no error for it
            if (!(chosen.equals("mpi") || any) || !JobDiscovery.startedByMpiLauncher(env)) throw e;
            finding = new JobDiscovery.Finding(JobSource.MPI, Optional.empty(), List.of());
            rendezvousProblem = e;
        }
        // the mpi backend starts itself (MPI_Init); under "any" an MPI launcher's job stays an MPI job, as before
        if (finding.job().isPresent() && !chosen.equals("mpi") && !(any && finding.source() == JobSource.MPI)) {
            return joinThroughRendezvous(chosen, finding.job().get(), env);
        }
        List<String> candidates = any ? ANY_ORDER : List.of(chosen);
        String lastTried = chosen;
        for (String name : candidates) {
            lastTried = name;
            Backend b = backends().get(name);
            if (b == null) {
                if (strict && !any) {
                    throw new ConfigException("the '" + name + "' backend is not part of this jdist build; "
                            + "add its module to the classpath or pick another backend");
                }
                continue;
            }
            Optional<GroupImpl> impl = b.init(!any && strict, env);   // "any" tries each non-strictly
            if (impl != null && impl.isPresent()) {
                return cache(name, formed(impl.get(), name, env, name.equals("mpi") ? finding.job() : Optional.empty()));
            }
        }
        if (strict) {
            throw new ConfigException(any
                    ? "could not initialize any distributed backend (tried " + String.join(", ", ANY_ORDER)
                      + "); launch with `jdist launch` or set MLX_RANK and MLX_HOSTFILE"
                    : "the '" + chosen + "' backend is not configured; launch with `jdist launch --backend "
                      + chosen + "` or set its environment variables");
        }
        if (rendezvousProblem != null) {
            throw new ConfigException("no backend formed the group of this MPI launcher's job (tried " + String.join(", ", candidates)
                    + "), and it cannot meet through the rendezvous either: " + rendezvousProblem.getMessage(), rendezvousProblem);
        }
        String alone = JobEvidence.severalProcesses(finding, env, candidates, Distributed::unavailableReason);
        if (alone != null) throw new ConfigException(alone);
        Group singleton = Group.singleton();
        CACHE.put(lastTried, singleton);
        return singleton;
    }

    /** {@code JDIST_BACKEND} stands in for {@code "any"}: the backend {@code init()} uses without code changes. */
    private static String chosenBackend(String backend, Map<String, String> env) {
        if (!backend.equals("any")) return backend;
        String v = env.get(BACKEND_VARIABLE);
        if (v == null || v.isBlank()) return "any";
        String t = v.strip();
        if (!VALID_NAMES.contains(t)) {
            throw new ConfigException(BACKEND_VARIABLE + "=\"" + v + "\" is not a backend; use one of "
                    + String.join(", ", VALID_NAMES) + " (or unset it: \"any\")");
        }
        return t;
    }

    /**
     * A group formed from MLX variables. With a job token every rank is jdist; without one, an MPI launcher's job
     * ({@code job}: what its variables say) meets beside the group through the rendezvous store, which an MLX rank never
     * joins (docs/reliability.md), and a backend that can ask its members whether all are jdist does (the ring's member
     * probe, docs/reference/collectives.md §3.13). When all are, the ranks agree over the group and it gets everything a
     * tokened group gets; otherwise it keeps MLX's bytes and behaviour and this rank says once which jdist features are
     * off and why.
     */
    private static Group formed(GroupImpl impl, String name, Map<String, String> env, Optional<ClusterJob> job) {
        if (JobToken.in(env) == null && impl.size() > 1 && name.equals("mpi")) {
            Group beside = besideTheLauncher(impl, env, job);
            if (beside != null) return beside;
        }
        JobTable table = null;
        if (impl.size() > 1) {
            try {
                boolean tokened = JobToken.in(env) != null;
                String notJdist = tokened ? null : impl.canProbeMembers() ? impl.probeMembers(env) : "";
                if (notJdist == null) {
                    table = GroupAgreement.check(impl, name, env);
                    impl.membersAreJdist(table, env);
                } else if (impl.canProbeMembers()) {
                    mlxPeersPossible(impl, name, env, notJdist);
                } else if (detail(env)) {
                    System.err.println("jdist: JDIST_DEBUG=detail compares operations only between jdist ranks (a job token, or a job "
                            + "met through a rendezvous); this " + name + " group may hold MLX peers, so its operations are not compared");
                }
            } catch (RuntimeException e) {
                impl.close();
                throw e;
            }
        }
        return watched(new Group(impl, OperationTrace.WORLD, table, null), env);
    }

    /** How long the ranks of an MPI job without a token look for each other beside the group before going on without. */
    static final Duration SIDE_CHANNEL_WAIT = Duration.ofSeconds(10);

    /**
     * An MPI launcher's job without a token: MLX ranks may be in it, so nothing may be added to the group's own traffic.
     * The ranks meet through the rendezvous store the launcher's variables already locate (rank 0's host, a port derived
     * from the launcher's job id), which an MLX rank never connects to; when every rank publishes a record within
     * {@link #SIDE_CHANNEL_WAIT} all are jdist, and the group gets the table and the watch, its records gathered through
     * the store. Otherwise (an MLX rank, the store unreachable) rank 0's verdict tells every rank alike, and the group
     * runs as before, without the watch; one line on stderr says why. Returns null then.
     */
    private static Group besideTheLauncher(GroupImpl impl, Map<String, String> env, Optional<ClusterJob> found) {
        String off = "jdist: rank " + impl.rank() + ": this MPI job runs without the liveness watch (docs/reliability.md): ";
        if (found.isEmpty()) {
            if (impl.rank() == 0) {
                System.err.println(off + "its launcher's variables do not say where rank 0 runs; set JDIST_MASTER_ADDR to rank 0's "
                        + "host (every rank jdist), or JDIST_JOB_TOKEN (`jdist launch --backend mpi` sets one)");
            }
            return null;
        }
        if (found.get().rank() != impl.rank() || found.get().size() != impl.size()) {
            System.err.println(off + "the launcher's variables say rank " + found.get().rank() + " of " + found.get().size()
                    + " (" + found.get().describe() + "), MPI says rank " + impl.rank() + " of " + impl.size());
            return null;
        }
        Map<String, String> sideEnv = new HashMap<>(env);
        Duration wait = Rendezvous.timeout(env);
        if (wait.compareTo(SIDE_CHANNEL_WAIT) > 0) wait = SIDE_CHANNEL_WAIT;
        sideEnv.put(Rendezvous.TIMEOUT, wait.toMillis() + "ms");
        RendezvousSession rv = null;
        JobTable table;
        try {
            rv = Rendezvous.open(found.get(), sideEnv);
            table = rv.agree(new RankOffer("mpi", Map.of(), List.of(), List.of()));
        } catch (RuntimeException e) {
            if (rv != null) rv.close();
            // every rank that reached the store read the same verdict; one that did not reach it has none either
            System.err.println(off + "the ranks did not all meet beside the group at " + found.get().masterHost() + ":"
                    + found.get().masterPort() + " within " + wait.toMillis() / 1000.0 + " s (an MLX rank of the job never does; "
                    + "else that port is unreachable or taken): " + e.getMessage());
            return null;
        }
        RendezvousSession session = rv;
        Group group = new Group(impl, OperationTrace.WORLD, table, session);
        try {
            impl.membersAreJdist(table, env);
            group.watchMembers(env, mine -> {
                List<byte[]> all = session.exchange("liveness", mine);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                for (byte[] b : all) out.writeBytes(b);
                return out.toByteArray();
            });
            return group;
        } catch (RuntimeException | Error e) {
            group.close();
            throw e;
        }
    }

    private static boolean detail(Map<String, String> env) {
        return "detail".equalsIgnoreCase(env.getOrDefault("JDIST_DEBUG", "").strip());
    }

    /**
     * The probe did not find every member jdist ({@code why}): MLX's behaviour, one line saying what is off, and
     * {@code JDIST_DEBUG=detail} refused, since its checks would pass silently with members that do not take part.
     */
    private static void mlxPeersPossible(GroupImpl impl, String name, Map<String, String> env, String why) {
        String who = "jdist: rank " + impl.rank() + ": ";
        if (detail(env)) {
            throw new ConfigException("rank " + impl.rank() + ": JDIST_DEBUG=detail compares every operation between the ranks, but "
                    + "this " + name + " group may hold MLX peers (" + why + "), which would not take part, so a mismatch "
                    + "could pass unseen. If every rank is jdist, give every rank the same JDIST_JOB_TOKEN (`jdist launch` sets "
                    + "one) or let UDP through on the ring's ports; otherwise unset JDIST_DEBUG");
        }
        impl.mayHoldMlxPeers(env);
        System.err.println(who + "this " + name + " group may hold MLX peers (" + why + "), so it runs as MLX's ring: no "
                + "liveness watch (a stopped rank is found only at JDIST_TIMEOUT, 30 min by default), no JDIST_DEBUG=detail "
                + "checks, no peer mesh (broadcast, barrier, all_to_all, gather, scatter and send/recv beyond the neighbours "
                + "are refused), MLX's ring schedule at every size. If every rank is jdist, set the same JDIST_JOB_TOKEN on "
                + "every rank");
    }

    /** Starts the liveness watch of a group whose members are all jdist (docs/reliability.md); closes the group on failure. */
    private static Group watched(Group group, Map<String, String> env) {
        try {
            group.watchMembers(env);
            return group;
        } catch (RuntimeException | Error e) {
            group.close();
            throw e;
        }
    }

    private static Group cache(String name, Group group) {
        CACHE.put(name, group);
        CACHE.putIfAbsent("any", group);
        return group;
    }

    /** A job found without MLX variables: meet through the store, then the chosen backend joins from the table. */
    private static Group joinThroughRendezvous(String chosen, ClusterJob job, Map<String, String> env) {
        RendezvousSession rv;
        try {
            rv = Rendezvous.open(job, env);
        } catch (DistributedException e) {
            // a rank that cannot be a member (rank not below its size) still tried to tell the others; that failed too
            if (job.problem() != null) throw new ConfigException(job.problem() + " (it could not tell the others: " + e.getMessage() + ")", e);
            throw e;
        }
        Group group = fromRendezvous(chosen, rv, "this process is rank " + job.rank() + " of a " + job.size() + "-process job ("
                + job.describe() + ")");
        return cache(group.backend(), group);
    }

    /**
     * The chosen backend (under {@code "any"}: the first in MLX's order that can start here) joins from {@code rv};
     * the group owns {@code rv} from then on. Closes {@code rv} on failure.
     */
    private static Group fromRendezvous(String chosen, RendezvousSession rv, String who) {
        boolean any = chosen.equals("any");
        List<String> candidates = any ? ANY_ORDER : List.of(chosen);
        try {
            List<String> declined = new ArrayList<>();
            for (String name : candidates) {
                Backend b = backends().get(name);
                if (b == null) {
                    if (!any) {
                        throw new ConfigException("the '" + name + "' backend is not part of this jdist build; "
                                + "add its module to the classpath or pick another backend");
                    }
                    continue;
                }
                if (rv.table().isPresent()) break;   // a backend agreed and then declined: nothing else may try
                Optional<GroupImpl> impl = b.join(!any, rv);   // a named backend must start: never a 1-rank group
                if (impl != null && impl.isPresent()) {
                    GroupImpl g = impl.get();
                    JobTable table = rv.table().orElse(null);
                    if (table != null && g.size() > 1) {
                        try {
                            g.membersAreJdist(table, rv.env());
                        } catch (RuntimeException | Error e) {
                            g.close();
                            throw e;
                        }
                    }
                    return watched(new Group(g, OperationTrace.WORLD, table, rv), rv.env());
                }
                declined.add(name + (b.unavailableReason().map(r -> " (" + r + ")").orElse("")));
            }
            throw new ConfigException(who + " but no backend could start from the rendezvous (declined: "
                    + String.join("; ", declined) + "); choose one that runs here with " + BACKEND_VARIABLE);
        } catch (RuntimeException | Error e) {
            rv.close();
            throw e;
        }
    }

    /** {@code connect(rank, size, exchange, "ring", System.getenv())}. */
    public static Group connect(int rank, int size, AllGatherFactory exchange) {
        return connect(rank, size, exchange, "ring", System.getenv());
    }

    /**
     * Forms a new group of {@code size} processes from an all-gather the caller provides instead of the environment:
     * Spark's {@code BarrierTaskContext.allGather}, or any embedder that already runs its processes together. Every
     * process calls it with its own {@code rank} and the same {@code size}; {@code exchange.create(rank, size)} must
     * return the rank-ordered concatenation of every process's bytes (as for JACCL's side channel). The processes
     * exchange their records through it and run the agreement check (docs/clusters.md), then {@code backend}
     * ({@code "ring"}, {@code "nccl"}, or {@code "any"}: nccl where a GPU is usable, else the ring) connects.
     *
     * <p>Not cached, unlike {@link #init()}: each call forms a fresh group, which the caller closes. Addresses come
     * from {@code JDIST_IFNAME} in {@code env}, else this host's first non-loopback IPv4 address. How long it waits
     * is the exchange's business; the backend's connections are bounded by {@code JDIST_TIMEOUT}.
     */
    public static Group connect(int rank, int size, AllGatherFactory exchange, String backend, Map<String, String> env) {
        if (backend == null || !VALID_NAMES.contains(backend) || backend.equals("mpi") || backend.equals("jaccl")) {
            throw new IllegalArgumentException("Distributed.connect forms a 'ring' or 'nccl' group (or 'any': nccl where a GPU "
                    + "is usable, else the ring), not '" + backend + "'");
        }
        RendezvousSession rv = Rendezvous.over(rank, size, exchange, env);
        return fromRendezvous(backend, rv, "rank " + rank + " of " + size + " (Distributed.connect)");
    }

    /**
     * A new group of {@code backend} formed from {@code env}, outside the cache: every call forms a fresh
     * group, which the caller owns and must close. For embedders that form several groups in one JVM, one
     * per job or attempt (the tasks of a Spark stage run side by side in one executor, and a retried stage
     * needs a new ring). The backend is started strictly: not configured is a {@link ConfigException}.
     *
     * @param backend a concrete backend name ({@code ring}, {@code mpi}, {@code nccl}, {@code jaccl}); not {@code any}
     */
    public static Group newGroup(String backend, Map<String, String> env) {
        if (backend == null || backend.equals("any") || !VALID_NAMES.contains(backend)) {
            throw new IllegalArgumentException("newGroup needs a concrete backend, got '" + backend + "'; valid: "
                    + String.join(", ", ANY_ORDER));
        }
        if (env == null) throw new IllegalArgumentException("newGroup needs the environment to read (a map), got null");
        Backend b;
        synchronized (Distributed.class) {
            b = backends().get(backend);
        }
        if (b == null) {
            throw new ConfigException("the '" + backend + "' backend is not part of this jdist build; "
                    + "add its module to the classpath or pick another backend");
        }
        GroupImpl g = b.init(true, keepDeadline(backend, env)).orElseThrow(() -> new ConfigException("the '" + backend
                + "' backend is not configured by the environment it was given"));
        return new Group(g, OperationTrace.WORLD);
    }

    /**
     * A ring from a hostfile without a token sets up within 30 s ({@code JdistTimeout.MLX_SETUP_DEFAULT}) because
     * {@code init} then probes its members and gives a group with MLX peers a 30-minute progress deadline; a group from
     * {@link #newGroup} does neither, so it keeps the one deadline it had for both, {@code JdistTimeout.DEFAULT}.
     */
    private static Map<String, String> keepDeadline(String backend, Map<String, String> env) {
        String timeout = env.get(JdistTimeout.VARIABLE);
        if (!backend.equals("ring") || JobToken.in(env) != null || (timeout != null && !timeout.isBlank())) return env;
        Map<String, String> e = new HashMap<>(env);
        e.put(JdistTimeout.VARIABLE, JdistTimeout.seconds(JdistTimeout.DEFAULT));
        return e;
    }

    /**
     * MLX's {@code init(strict, "jaccl", factory)}: JACCL with a custom side channel instead of the TCP
     * coordinator. Only valid with backend {@code "jaccl"} (IllegalArgumentException otherwise, before any
     * cache lookup); when {@code "jaccl"} is already cached the factory is ignored.
     */
    public static Group init(boolean strict, String backend, AllGatherFactory sideChannel) {
        return init(strict, backend, sideChannel, System.getenv());
    }

    /** As {@link #init(boolean, String, AllGatherFactory)}, reading {@code env}. */
    public static synchronized Group init(boolean strict, String backend, AllGatherFactory sideChannel, Map<String, String> env) {
        if (!"jaccl".equals(backend)) {
            throw new IllegalArgumentException("a custom side channel (all-gather factory) is only valid with the 'jaccl' backend, not '"
                    + backend + "'");
        }
        if (sideChannel == null) throw new IllegalArgumentException("the JACCL side-channel factory must not be null");
        Group cached = CACHE.get(backend);
        if (cached != null) return cached;
        Backend b = backends().get(backend);
        if (b == null) {
            if (strict) throw new ConfigException("the 'jaccl' backend is not part of this jdist build");
        } else {
            Optional<GroupImpl> impl = b.init(strict, env, sideChannel);
            if (impl.isPresent()) {
                GroupImpl g = impl.get();
                Group group = new Group(g, OperationTrace.WORLD);
                CACHE.put(backend, group);
                CACHE.putIfAbsent("any", group);
                return group;
            }
        }
        Group singleton = Group.singleton();
        CACHE.put(backend, singleton);
        return singleton;
    }

    // One-group programs: the collectives on the default group, as MLX's mx.distributed.all_sum(x) without a
    // group. Each is init() (backend "any", cached after the first call) followed by the Group method.

    /** {@code init().allSum(x)}. */
    public static Array allSum(Array x) { return init().allSum(x); }

    /** {@code init().allMax(x)}. */
    public static Array allMax(Array x) { return init().allMax(x); }

    /** {@code init().allMin(x)}. */
    public static Array allMin(Array x) { return init().allMin(x); }

    /** {@code init().allGather(x)}. */
    public static Array allGather(Array x) { return init().allGather(x); }

    /** {@code init().sumScatter(x)}. */
    public static Array sumScatter(Array x) { return init().sumScatter(x); }

    /** {@code init().send(x, dst)}. */
    public static Array send(Array x, int dst) { return init().send(x, dst); }

    /** {@code init().recv(shape, dtype, src)}. */
    public static Array recv(int[] shape, DType dtype, int src) { return init().recv(shape, dtype, src); }

    /** {@code init().recvLike(like, src)}. */
    public static Array recvLike(Array like, int src) { return init().recvLike(like, src); }

    /** {@code init().broadcast(x, root)}. */
    public static Array broadcast(Array x, int root) { return init().broadcast(x, root); }

    /** {@code init().barrier()}. */
    public static void barrier() { init().barrier(); }

    /** {@code init().allToAll(x)}. */
    public static Array allToAll(Array x) { return init().allToAll(x); }

    /** {@code init().allToAllV(x, sendSplits)}. */
    public static Array allToAllV(Array x, int[] sendSplits) { return init().allToAllV(x, sendSplits); }

    /** {@code init().allToAllV(x, sendSplits, recvSplits)}. */
    public static Array allToAllV(Array x, int[] sendSplits, int[] recvSplits) {
        return init().allToAllV(x, sendSplits, recvSplits);
    }

    /** {@code init().gather(x, root)}. */
    public static Array gather(Array x, int root) { return init().gather(x, root); }

    /** {@code init().scatter(x, root)}. */
    public static Array scatter(Array x, int root) { return init().scatter(x, root); }

    /** {@code init().batchSendRecv(ops)}. */
    public static java.util.List<Array> batchSendRecv(java.util.List<PeerOp> ops) { return init().batchSendRecv(ops); }

    /** {@code isAvailable("any")}. */
    public static boolean isAvailable() { return isAvailable("any"); }

    /** Whether this process could instantiate {@code backend}; never throws, never touches the network. */
    public static boolean isAvailable(String backend) {
        try {
            if (backend.equals("any")) {
                return backends().values().stream().anyMatch(Distributed::available);
            }
            Backend b = backends().get(backend);
            return b != null && available(b);
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /**
     * Why {@link #isAvailable(String) isAvailable(backend)} is false — the library that did not load, the
     * missing device — or empty when it is true. Never throws, never touches the network.
     */
    public static Optional<String> unavailableReason(String backend) {
        try {
            if (backend.equals("any")) {
                return isAvailable("any") ? Optional.empty() : Optional.of("no backend is available");
            }
            Backend b = backends().get(backend);
            if (b == null) return Optional.of("unknown backend '" + backend + "' (known: " + backends().keySet() + ")");
            return b.unavailableReason();
        } catch (RuntimeException | LinkageError e) {
            return Optional.of(String.valueOf(e));
        }
    }

    private static boolean available(Backend b) {
        try {
            return b.isAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** Closes every cached group and empties the cache (MLX: {@code clear_backends()}). */
    public static synchronized void reset() {
        // The same group may be cached under two names ("ring" and "any"): close each once.
        Set<Group> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
        distinct.addAll(CACHE.values());
        for (Group g : distinct) {
            try {
                g.close();
            } catch (RuntimeException ignored) {
                // closing is best effort; the cache is emptied regardless
            }
        }
        CACHE.clear();
    }

    /**
     * Test hook: use exactly {@code fakes} instead of the {@link ServiceLoader} backends (null
     * restores the ServiceLoader). Empties the cache after closing its groups.
     */
    static synchronized void useBackendsForTesting(List<Backend> fakes) {
        reset();
        if (fakes == null) {
            backends = null;
            return;
        }
        Map<String, Backend> found = new LinkedHashMap<>();
        for (Backend b : fakes) found.putIfAbsent(b.name(), b);
        backends = found;
    }

    private static synchronized Map<String, Backend> backends() {
        if (backends == null) {
            Map<String, Backend> found = new LinkedHashMap<>();
            for (Backend b : ServiceLoader.load(Backend.class, Distributed.class.getClassLoader())) {
                found.putIfAbsent(b.name(), b);
            }
            backends = found;
        }
        return backends;
    }
}
