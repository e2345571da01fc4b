package dev.jdist.nccl;

import dev.jdist.ConfigException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JdistTimeout;
import dev.jdist.spi.JobRendezvous;
import dev.jdist.spi.RankOffer;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code nccl} backend (docs/reference/collectives.md §6): GPU collectives through libnccl and the CUDA
 * runtime, both bound with java.lang.foreign and loaded only when this backend is asked for.
 *
 * <p>Environment: {@code NCCL_HOST_IP}, {@code NCCL_PORT}, {@code MLX_RANK}, {@code MLX_WORLD_SIZE}
 * (all four, or the backend is not configured), {@code MLX_NCCL_TIMEOUT} (ms, default 300000),
 * {@code CUDA_VISIBLE_DEVICES} (read by CUDA), {@code NCCL_*} (read by NCCL), and jdist's
 * {@code JDIST_NCCL_LIBRARY} / {@code JDIST_CUDART_LIBRARY} to point at the libraries and
 * {@code JDIST_TIMEOUT} (the deadline of communicator creation and of every operation).
 *
 * <p>{@link #isAvailable()} is true when both libraries load and CUDA reports at least one device;
 * otherwise {@link #unavailableReason()} says why. Neither throws.
 */
public final class NcclBackend implements Backend {

    private static final System.Logger LOG = System.getLogger("dev.jdist.nccl");

    private static final List<String> LIBRARY_VARS =
            List.of(NativeLibraries.NCCL_LIBRARY_ENV, NativeLibraries.CUDART_LIBRARY_ENV, "CUDA_HOME");

    private final Map<String, String> env;
    private volatile Optional<String> unavailable;

    /** The backend ServiceLoader finds: libraries located with the process environment. */
    public NcclBackend() {
        this(System.getenv());
    }

    /** A backend that locates the libraries with {@code env} ({@code JDIST_NCCL_LIBRARY}, {@code JDIST_CUDART_LIBRARY}, {@code CUDA_HOME}). */
    public NcclBackend(Map<String, String> env) {
        this.env = Map.copyOf(env);
    }

    @Override
    public String name() { return "nccl"; }

    @Override
    public boolean isAvailable() {
        return unavailableReason().isEmpty();
    }

    /**
     * Why this process cannot use NCCL (a library that does not load, a missing symbol, no CUDA device,
     * a CUDA error), or empty when it can. Computed once; never throws.
     */
    @Override
    public Optional<String> unavailableReason() {
        Optional<String> r = unavailable;
        if (r == null) {
            r = probe(env);
            unavailable = r;
        }
        return r;
    }

    private static Optional<String> probe(Map<String, String> libEnv) {
        try {
            NcclNatives n = NcclNatives.load(libEnv);
            int devices = n.cuda().deviceCount();
            if (devices < 1) {
                return Optional.of("CUDA reports no device (CUDA_VISIBLE_DEVICES="
                        + libEnv.getOrDefault("CUDA_VISIBLE_DEVICES", "unset") + ")");
            }
            return Optional.empty();
        } catch (Throwable t) {
            if (t instanceof VirtualMachineError vme && !(t instanceof StackOverflowError)) throw vme;
            return Optional.of(t.getMessage() == null ? t.toString() : t.getMessage());
        }
    }

    @Override
    public Optional<GroupImpl> init(boolean strict, Map<String, String> initEnv) {
        Optional<NcclConfig> maybe = NcclConfig.fromEnv(initEnv, strict);
        if (maybe.isEmpty()) return Optional.empty();
        NcclConfig cfg = maybe.get();

        Map<String, String> libEnv = libraryEnv(initEnv);
        Optional<String> reason = probe(libEnv);
        if (reason.isPresent()) {
            if (!strict) return Optional.empty();
            throw new ConfigException("the nccl backend is configured (MLX_RANK=" + cfg.rank() + ", MLX_WORLD_SIZE="
                    + cfg.worldSize() + ") but cannot run here: " + reason.get());
        }
        NcclNatives n = NcclNatives.load(libEnv);
        return Optional.of(connect(cfg, n));
    }

    /**
     * NCCL from a rendezvous (docs/clusters.md): the device is the local rank (else the rank) modulo the visible
     * devices, and rank 0's unique id travels through the rendezvous instead of NCCL_HOST_IP:NCCL_PORT. Not
     * available here (no library, no device): empty when {@code strict} is false, before anything is exchanged.
     */
    @Override
    public Optional<GroupImpl> join(boolean strict, JobRendezvous rendezvous) {
        Map<String, String> libEnv = libraryEnv(rendezvous.env());
        Optional<String> reason = probe(libEnv);
        if (reason.isPresent()) {
            if (!strict) return Optional.empty();
            throw new ConfigException("the nccl backend was chosen (" + rendezvous.description() + ") but cannot run here: "
                    + reason.get());
        }
        NcclNatives n = NcclNatives.load(libEnv);
        int devices = n.cuda().deviceCount();
        int device = rendezvous.localRank().orElse(rendezvous.rank()) % devices;
        rendezvous.agree(new RankOffer("nccl", Map.of(), List.of(), List.of("nccl")));
        byte[] mine = new byte[0];
        if (rendezvous.rank() == 0) {
            n.cuda().setDevice(device);
            mine = n.nccl().getUniqueId();
        }
        byte[] id = rendezvous.exchange("nccl-unique-id", mine).getFirst();
        if (id.length != NcclApi.UNIQUE_ID_BYTES) {
            throw new DistributedException("nccl rank " + rendezvous.rank() + ": rank 0 published an NCCL unique id of " + id.length
                    + " bytes, not " + NcclApi.UNIQUE_ID_BYTES);
        }
        Duration deadline = JdistTimeout.parse(rendezvous.env().get(JdistTimeout.VARIABLE));
        return Optional.of(communicator(n, device, rendezvous.rank(), rendezvous.size(), id, deadline));
    }

    /** The library variables from the init environment, else from this backend's own. */
    private Map<String, String> libraryEnv(Map<String, String> initEnv) {
        Map<String, String> libEnv = new HashMap<>();
        for (String v : LIBRARY_VARS) {
            String value = initEnv.containsKey(v) ? initEnv.get(v) : env.get(v);
            if (value != null) libEnv.put(v, value);
        }
        libEnv.put("CUDA_VISIBLE_DEVICES", initEnv.getOrDefault("CUDA_VISIBLE_DEVICES",
                env.getOrDefault("CUDA_VISIBLE_DEVICES", "unset")));
        return libEnv;
    }

    /**
     * Device selection (§6.2), the unique-id bootstrap (§6.3) and communicator creation (§6.4): non-blocking
     * ({@code ncclCommInitRankConfig} with {@code blocking = 0}, NCCL 2.14 and later) and watched with
     * {@code ncclCommGetAsyncError} until every rank has joined, within the deadline ({@code JDIST_TIMEOUT});
     * a rank that never joins ends in {@code ncclCommAbort} and a {@link DeadlineExceededException}. Older
     * NCCL: the blocking {@code ncclCommInitRank}.
     */
    static NcclGroup connect(NcclConfig cfg, NcclNatives n) {
        int devices = n.cuda().deviceCount();
        int device = cfg.rank() % devices;
        n.cuda().setDevice(device);
        byte[] id = NcclBootstrap.exchange(cfg, () -> {
            n.cuda().setDevice(device);
            return n.nccl().getUniqueId();
        });
        return communicator(n, device, cfg.rank(), cfg.worldSize(), id, cfg.deadline());
    }

    /** The communicator over the shared id (non-blocking where NCCL can), and the group's stream. */
    private static NcclGroup communicator(NcclNatives n, int device, int rank, int size, byte[] id, Duration deadline) {
        String who = "nccl rank " + rank + " of " + size;
        n.cuda().setDevice(device);
        String where = who + " (cuda:" + device + ")";
        MemorySegment comm;
        if (n.nccl().nonblocking()) {
            comm = createNonblocking(n, id, rank, size, deadline, where);
        } else {
            LOG.log(System.Logger.Level.WARNING, "{0} lacks ncclCommInitRankConfig (NCCL before 2.14): communicators are "
                    + "blocking, and a stopped peer can hang this process", n.nccl().libraryName());
            try {
                comm = n.nccl().commInitRank(size, id, rank);
            } catch (DistributedException e) {
                throw new DistributedException(where + ": " + e.getMessage(), e, rank, "init");
            }
        }
        MemorySegment stream;
        try {
            stream = n.cuda().streamCreate();
        } catch (RuntimeException e) {
            NcclProgress.abort(n.nccl(), comm, where);
            throw e;
        }
        return new NcclGroup(n, device, comm, stream, deadline);
    }

    private static MemorySegment createNonblocking(NcclNatives n, byte[] id, int rank, int size, Duration deadline, String where) {
        String op = "init (ncclCommInitRankConfig, non-blocking)";
        MemorySegment[] failed = {MemorySegment.NULL};
        MemorySegment comm;
        try {
            comm = n.nccl().commInitRankNonblocking(size, id, rank, failed);
        } catch (DistributedException e) {
            NcclProgress.abort(n.nccl(), failed[0], where);
            throw new DistributedException(where + ": " + e.getMessage(), e, rank, op);
        }
        int[] async = {NcclApi.IN_PROGRESS};
        boolean ready;
        try {
            ready = NcclProgress.await(deadline, () -> (async[0] = n.nccl().asyncError(comm)) != NcclApi.IN_PROGRESS);
        } catch (DistributedException e) {
            NcclProgress.abort(n.nccl(), comm, where);
            throw new DistributedException(where + ": " + e.getMessage(), e, rank, op);
        }
        if (!ready) {
            NcclProgress.abort(n.nccl(), comm, where);
            throw new DeadlineExceededException(where + ": creating the communicator (" + op + ") did not complete within "
                    + NcclProgress.seconds(deadline) + " (JDIST_TIMEOUT): not every one of the " + size
                    + " ranks joined (one stopped, died or cannot reach the others after fetching the unique id); jdist "
                    + "aborted it (ncclCommAbort). Set NCCL_DEBUG=INFO to see NCCL's connection attempts", null, rank,
                    "init", deadline);
        }
        if (async[0] != NcclApi.SUCCESS) {
            DistributedException e = NcclProgress.asyncFailure(n.nccl(), comm, async[0], rank, "init", where);
            NcclProgress.abort(n.nccl(), comm, where);
            throw e;
        }
        return comm;
    }
}
