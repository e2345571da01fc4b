package dev.jdist.ring;

import dev.jdist.ConfigException;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.spi.JdistTimeout;
import dev.jdist.spi.JobToken;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What the ring reads from the environment (docs/reference/collectives.md §3.1 and §9):
 * {@code MLX_RANK}, {@code MLX_HOSTFILE}, {@code MLX_RING_VERBOSE} (MLX) and the jdist extensions
 * {@code JDIST_TIMEOUT} ({@link JdistTimeout}; default 120 s with a job token, else 30 s for connection set-up),
 * {@code JDIST_JOB_TOKEN} (turns on the connection handshake), {@code JDIST_TRANSPORT} ({@code tcp}, the
 * default, or {@code shm}: the ring's bytes move through shared memory when every rank is on one host) and
 * {@code JDIST_SHM_BUFFER_KIB} (the shared-memory buffer per direction and connection); and the transports'
 * internal sizes and waits ({@link Tuning}), which no variable sets.
 *
 * <p>From code: {@link #of(int, RingHostfile)} (defaults for everything but the rank and the hostfile, which may be
 * built in memory), the full constructor, or the 8-value constructor (default tuning); {@link #withTuning} for tests.
 */
public record RingSettings(int rank, RingHostfile hostfile, boolean verbose, Duration timeout, String jobToken,
                           long spinMicros, Transport transport, long shmLinkBytes, Tuning tuning) {

    /** How the ring moves bytes once its TCP connections are formed. */
    public enum Transport {
        /** The ring's TCP connections (MLX-compatible wire). */
        TCP,
        /** Shared memory between ranks on one host; the TCP connections stay open to notice a lost peer. */
        SHM;

        public String envValue() { return name().toLowerCase(java.util.Locale.ROOT); }
    }

    public static final String RANK = "MLX_RANK";
    public static final String HOSTFILE = "MLX_HOSTFILE";
    public static final String VERBOSE = "MLX_RING_VERBOSE";
    public static final String TIMEOUT = JdistTimeout.VARIABLE;
    public static final String SPIN = "JDIST_RING_SPIN_US";
    public static final String TRANSPORT = "JDIST_TRANSPORT";
    public static final String SHM_BUFFER = "JDIST_SHM_BUFFER_KIB";
    /** Default shared-memory buffer per direction and connection, in KiB (fits the L2 cache of one core). */
    public static final long DEFAULT_SHM_BUFFER_KIB = 1024;
    /**
     * Default microseconds an operation polls its sockets (yielding the CPU between polls) before
     * sleeping in the selector. 50 µs: measured on an idle 2-core machine (docs/benchmarks-log.md), a short yielding poll halves 4-byte
     * all_sum latency with 2 ranks (≈55 → ≈20 µs) and helps even 4 ranks on 2 cores (≈200 → ≈120 µs),
     * because the poll yields the CPU to the peer it waits for. Hosts crowded with other busy processes may
     * do better with 0.
     */
    public static final long DEFAULT_SPIN_MICROS = 50;
    /** Default deadline for connection set-up and for progress inside one operation. */
    public static final long DEFAULT_TIMEOUT_SECONDS = JdistTimeout.DEFAULT.toSeconds();

    /**
     * The transports' internal sizes and waits. Production runs with {@link #DEFAULT}; tests shrink the sizes to
     * drive the code paths of large arrays (socket windows, sum_scatter pieces) with small ones.
     *
     * @param socketWindowBytes   TCP: bytes per socket call and per ByteBuffer view of an array; ByteBuffers are
     *                            int-indexed, so at most {@link #MAX_SOCKET_WINDOW_BYTES} (1 GiB)
     * @param sumScatterWorkBytes the bound of a group's sum_scatter work buffer (16 MiB; with the TCP transport's
     *                            16 MiB of scratch, the group's own buffers stay within 32 MiB)
     * @param shmBurstBytes       shm: bytes one stream moves per visit before the thread turns to the next stream
     *                            (64 KiB: a chunk just reduced is usually still in the cache when it is forwarded)
     * @param shmSpinNanos        shm: how long a waiter spins ({@link Thread#onSpinWait}) before yielding. Kept short
     *                            (2 µs): when the scheduler has put both ranks on one core, a spinning waiter only
     *                            delays the peer it waits for; {@link Thread#yield} lets it run at once, and costs
     *                            little when the peer runs on another core
     * @param shmYieldNanos       shm: how long a waiter then yields before it sleeps until a doorbell (1 ms): long
     *                            enough that a rank does not fall asleep in the middle of a transfer, since a sleeper
     *                            is woken by a socket write and Linux then tends to move it onto the waker's core, where
     *                            the two ranks would keep taking turns instead of running side by side
     */
    public record Tuning(long socketWindowBytes, long sumScatterWorkBytes, long shmBurstBytes, long shmSpinNanos,
                         long shmYieldNanos) {
        public static final long MAX_SOCKET_WINDOW_BYTES = 1L << 30;
        public static final Tuning DEFAULT = new Tuning(MAX_SOCKET_WINDOW_BYTES, 16L << 20, 64L << 10, 2_000, 1_000_000);

        public Tuning {
            if (socketWindowBytes < 1 || socketWindowBytes > MAX_SOCKET_WINDOW_BYTES || sumScatterWorkBytes < 1
                    || shmBurstBytes < 1 || shmSpinNanos < 0 || shmYieldNanos < 0) {
                throw new IllegalArgumentException("ring tuning out of range: socketWindowBytes " + socketWindowBytes
                        + " (1.." + MAX_SOCKET_WINDOW_BYTES + "), sumScatterWorkBytes " + sumScatterWorkBytes + " (>= 1), "
                        + "shmBurstBytes " + shmBurstBytes + " (>= 1), shmSpinNanos " + shmSpinNanos + " and shmYieldNanos "
                        + shmYieldNanos + " (>= 0)");
            }
        }

        public Tuning withSocketWindowBytes(long bytes) {
            return new Tuning(bytes, sumScatterWorkBytes, shmBurstBytes, shmSpinNanos, shmYieldNanos);
        }

        public Tuning withSumScatterWorkBytes(long bytes) {
            return new Tuning(socketWindowBytes, bytes, shmBurstBytes, shmSpinNanos, shmYieldNanos);
        }
    }

    public RingSettings {
        Objects.requireNonNull(hostfile, "hostfile");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(transport, "transport");
        Objects.requireNonNull(tuning, "tuning");
        if (rank < 0 || rank >= hostfile.size()) {
            throw new IllegalArgumentException("rank " + rank + " is not a rank of the " + hostfile.size() + "-rank ring in "
                    + hostfile.source());
        }
    }

    /** Settings with the default {@link Tuning}. */
    public RingSettings(int rank, RingHostfile hostfile, boolean verbose, Duration timeout, String jobToken,
                        long spinMicros, Transport transport, long shmLinkBytes) {
        this(rank, hostfile, verbose, timeout, jobToken, spinMicros, transport, shmLinkBytes, Tuning.DEFAULT);
    }

    /**
     * The settings of rank {@code rank} of the ring {@code hostfile} describes, everything else at its default:
     * TCP, the set-up deadline of a ring without a job token (30 s), no job token, not verbose (what {@link #fromEnvironment} gives when only
     * {@code MLX_RANK} and {@code MLX_HOSTFILE} are set).
     */
    public static RingSettings of(int rank, RingHostfile hostfile) {
        return new RingSettings(rank, hostfile, false, JdistTimeout.MLX_SETUP_DEFAULT, null,
                DEFAULT_SPIN_MICROS, Transport.TCP, DEFAULT_SHM_BUFFER_KIB * 1024);
    }

    /** The same settings for rank {@code rank} of another ring (a split's sub-ring, described by {@code hostfile}). */
    public RingSettings forRing(int rank, RingHostfile hostfile) {
        return new RingSettings(rank, hostfile, verbose, timeout, jobToken, spinMicros, transport, shmLinkBytes, tuning);
    }

    /** The same settings with other {@link Tuning} (tests). */
    public RingSettings withTuning(Tuning tuning) {
        return new RingSettings(rank, hostfile, verbose, timeout, jobToken, spinMicros, transport, shmLinkBytes, tuning);
    }

    public int size() { return hostfile.size(); }

    /** The rank this one accepts its {@code left} connections from. */
    public int leftRank() { return (rank - 1 + size()) % size(); }

    /** The rank this one makes its {@code right} connections to. */
    public int rightRank() { return (rank + 1) % size(); }

    /** Connections per neighbour: the number of addresses in this rank's hostfile entry. */
    public int connectionsPerNeighbour() { return hostfile.addresses(rank).size(); }

    public boolean authenticated() { return jobToken != null; }

    /**
     * Reads the settings, or empty when the ring is not configured ({@code MLX_RANK} or
     * {@code MLX_HOSTFILE} unset) and {@code strict} is false.
     */
    public static Optional<RingSettings> fromEnvironment(boolean strict, Map<String, String> env) {
        String rankText = env.get(RANK);
        String hostfileText = env.get(HOSTFILE);
        if (rankText == null || hostfileText == null) {
            if (!strict) return Optional.empty();
            throw new ConfigException("the ring backend is not configured: it needs both " + RANK + " and " + HOSTFILE
                    + " (seen " + RANK + "=" + shown(rankText) + ", " + HOSTFILE + "=" + shown(hostfileText)
                    + "); start the program with `jdist launch`, or set " + RANK + " to this process's rank and "
                    + HOSTFILE + " to the JSON file listing every rank's addresses");
        }
        String token = JobToken.in(env);
        // without a token MLX peers may be among the ranks: set-up as short as MLX's connect retries (the progress
        // deadline once connected is set by the group, JdistTimeout.MLX_SETUP_DEFAULT)
        Duration timeout = JdistTimeout.parse(TIMEOUT, env.get(TIMEOUT), token == null ? JdistTimeout.MLX_SETUP_DEFAULT : JdistTimeout.DEFAULT);
        int rank = parseRank(rankText);
        if (hostfileText.isEmpty()) {
            throw new ConfigException(HOSTFILE + " is set but empty; set it to the path of the ring hostfile");
        }
        RingHostfile hostfile = RingHostfile.read(Path.of(hostfileText));
        if (rank >= hostfile.size()) {
            throw new ConfigException(RANK + "=" + rank + " is too large for the " + hostfile.size() + "-rank ring in "
                    + hostfileText + "; valid ranks are 0.." + (hostfile.size() - 1));
        }
        Transport transport = parseTransport(env.get(TRANSPORT));
        long shmLinkBytes = parseShmBufferKib(env.get(SHM_BUFFER)) * 1024;
        return Optional.of(new RingSettings(rank, hostfile, env.containsKey(VERBOSE), timeout, token, parseSpin(env.get(SPIN)),
                transport, shmLinkBytes));
    }

    static int parseRank(String text) {
        String t = text;
        if (t.isEmpty() || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new ConfigException(RANK + "=\"" + text + "\" is not a rank: it must be a non-negative decimal integer "
                    + "such as 0, 1, 2");
        }
        try {
            return Integer.parseInt(t);
        } catch (NumberFormatException e) {
            throw new ConfigException(RANK + "=\"" + text + "\" is too large to be a rank");
        }
    }

    static long parseSpin(String text) {
        if (text == null || text.isBlank()) return DEFAULT_SPIN_MICROS;
        try {
            long v = Long.parseLong(text.strip());
            if (v >= 0 && v <= 1_000_000) return v;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new ConfigException(SPIN + "=\"" + text + "\" is not a number of microseconds in 0..1000000 (0 = never poll, "
                + "always sleep in the selector); unset it for the default of " + DEFAULT_SPIN_MICROS);
    }

    /** {@code JDIST_TRANSPORT}: unset or empty = tcp; otherwise {@code tcp} or {@code shm} (any case, spaces ignored). */
    static Transport parseTransport(String text) {
        if (text == null || text.isBlank()) return Transport.TCP;
        String t = text.strip().toLowerCase(java.util.Locale.ROOT);
        for (Transport tr : Transport.values()) if (tr.envValue().equals(t)) return tr;
        throw new ConfigException(TRANSPORT + "=\"" + text + "\" is not a ring transport; allowed values: tcp (the default: "
                + "the ring's TCP connections, MLX-compatible) or shm (shared memory, every rank on one host); unset it "
                + "for tcp");
    }

    /** {@code JDIST_SHM_BUFFER_KIB}: a power of two in 4..8192; unset = {@value #DEFAULT_SHM_BUFFER_KIB}. */
    static long parseShmBufferKib(String text) {
        if (text == null || text.isBlank()) return DEFAULT_SHM_BUFFER_KIB;
        try {
            long v = Long.parseLong(text.strip());
            if (v >= 4 && v <= 8192 && Long.bitCount(v) == 1) return v;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new ConfigException(SHM_BUFFER + "=\"" + text + "\" is not a shared-memory buffer size: it must be a power "
                + "of two from 4 to 8192 (KiB per direction and connection); unset it for the default of "
                + DEFAULT_SHM_BUFFER_KIB);
    }

    static Duration parseTimeout(String text) {
        return JdistTimeout.parse(text);
    }

    private static String shown(String v) { return v == null ? "<unset>" : "\"" + v + "\""; }
}
