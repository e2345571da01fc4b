package dev.jdist.nccl;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.function.Supplier;

/**
 * The NCCL unique-id bootstrap, docs/reference/collectives.md §6.3 [wire], independent of libnccl (the id comes from a
 * supplier, so tests run it without the library).
 *
 * <ul>
 *   <li>Rank 0 asks the supplier for the 128-byte id, opens an IPv4 TCP listener with
 *       {@code SO_REUSEADDR} on {@code NCCL_HOST_IP:NCCL_PORT} (jdist binds that address, not the
 *       wildcard MLX binds; the bytes are the same) with backlog {@code n-1}, then {@code n-1} times:
 *       accept, write the 128 bytes, close. It waits at most {@code MLX_NCCL_TIMEOUT} ms in all
 *       (MLX waits forever).</li>
 *   <li>Rank q &gt; 0 connects to the first IPv4 address of {@code NCCL_HOST_IP} on {@code NCCL_PORT};
 *       while that is refused and less than {@code MLX_NCCL_TIMEOUT} ms have passed it sleeps
 *       500 ms and retries; any other error stops. Then it reads exactly 128 bytes and closes.</li>
 *   <li>No greeting, no rank: rank 0 hands the same id to whoever connects.</li>
 * </ul>
 * Every failure is an exception naming the rank, the address, the timeout, the retries and the OS
 * reason; nothing here ends the process.
 */
final class NcclBootstrap {

    static final long RETRY_INTERVAL_MS = 500;
    private static final System.Logger LOG = System.getLogger(NcclBootstrap.class.getName());

    private NcclBootstrap() {}

    /**
     * Runs this rank's side of the bootstrap.
     *
     * @param idProvider called once, on rank 0 only, for the id to serve ({@code ncclGetUniqueId})
     * @return the 128-byte id every rank passes to {@code ncclCommInitRank}
     */
    static byte[] exchange(NcclConfig cfg, Supplier<byte[]> idProvider) {
        long start = System.nanoTime();
        byte[] id;
        if (cfg.rank() == 0) {
            id = idProvider.get();
            if (id == null || id.length != NcclApi.UNIQUE_ID_BYTES) {
                throw new IllegalStateException("the NCCL unique id must have " + NcclApi.UNIQUE_ID_BYTES + " bytes");
            }
            serve(cfg, id);
        } else {
            id = fetch(cfg);
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        if (cfg.debugInfo()) {
            System.err.println("[nccl] rank " + cfg.rank() + ": NCCL unique-id bootstrap took " + ms + " ms");
        }
        LOG.log(System.Logger.Level.DEBUG, "rank {0}: NCCL unique-id bootstrap took {1} ms", cfg.rank(), ms);
        return id;
    }

    /** Rank 0: serve {@code id} to the {@code n-1} other ranks. */
    static void serve(NcclConfig cfg, byte[] id) {
        InetAddress addr = firstIpv4(cfg);
        String where = addr.getHostAddress() + ":" + cfg.port();
        int others = cfg.worldSize() - 1;
        long waitMs = cfg.timeoutMs() > 0 ? cfg.timeoutMs() : NcclConfig.DEFAULT_TIMEOUT_MS;
        long deadline = System.nanoTime() + waitMs * 1_000_000;
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            try {
                server.bind(new InetSocketAddress(addr, cfg.port()), Math.max(others, 1));
            } catch (IOException e) {
                throw new ConnectFailedException("rank 0 could not listen on " + where + " (NCCL_HOST_IP:NCCL_PORT) to "
                        + "serve the NCCL unique id: " + reason(e) + "; NCCL_HOST_IP must be an address of rank 0's "
                        + "host and NCCL_PORT a free port (is another job using it?)", e);
            }
            for (int served = 0; served < others; served++) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) throw acceptTimeout(cfg, where, served, waitMs, null);
                server.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, left)));
                try (Socket s = server.accept()) {
                    s.getOutputStream().write(id);
                    s.getOutputStream().flush();
                } catch (SocketTimeoutException e) {
                    throw acceptTimeout(cfg, where, served, waitMs, e);
                } catch (IOException e) {
                    throw new ConnectFailedException("rank 0 failed to hand the NCCL unique id to a connecting rank on "
                            + where + " (" + served + " of " + others + " served): " + reason(e), e);
                }
            }
        } catch (IOException e) {
            throw new ConnectFailedException("rank 0 could not serve the NCCL unique id on " + where + ": " + reason(e), e);
        }
    }

    private static DeadlineExceededException acceptTimeout(NcclConfig cfg, String where, int served, long waitMs,
                                                           Throwable cause) {
        return new DeadlineExceededException("rank 0 served the NCCL unique id on " + where + " to only " + served
                + " of " + (cfg.worldSize() - 1) + " ranks within MLX_NCCL_TIMEOUT=" + waitMs + " ms; are all "
                + cfg.worldSize() + " ranks started, with the same NCCL_HOST_IP and NCCL_PORT?", cause);
    }

    /** Rank q &gt; 0: fetch the id from rank 0, retrying refused connections every 500 ms. */
    static byte[] fetch(NcclConfig cfg) {
        InetAddress addr = firstIpv4(cfg);
        InetSocketAddress target = new InetSocketAddress(addr, cfg.port());
        String where = addr.getHostAddress() + ":" + cfg.port();
        long start = System.nanoTime();
        int retries = 0;
        while (true) {
            long elapsed = (System.nanoTime() - start) / 1_000_000;
            long connectWait = Math.max(1000, cfg.timeoutMs() - elapsed);
            try (Socket s = new Socket()) {
                s.connect(target, (int) Math.min(Integer.MAX_VALUE, connectWait));
                s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(10_000, cfg.timeoutMs())));
                return readId(cfg, s.getInputStream(), where);
            } catch (ConnectException e) {
                elapsed = (System.nanoTime() - start) / 1_000_000;
                if (isRefused(e) && elapsed < cfg.timeoutMs()) {
                    retries++;
                    sleep(cfg, where);
                    continue;
                }
                throw new ConnectFailedException("rank " + cfg.rank() + " could not fetch the NCCL unique id from rank 0 at "
                        + where + " after " + retries + " retries over " + elapsed + " ms (MLX_NCCL_TIMEOUT="
                        + cfg.timeoutMs() + " ms): " + reason(e) + "; is rank 0 running, and are NCCL_HOST_IP and "
                        + "NCCL_PORT rank 0's address and port?", e);
            } catch (SocketTimeoutException e) {
                throw new DeadlineExceededException("rank " + cfg.rank() + " timed out fetching the NCCL unique id from "
                        + "rank 0 at " + where + " after " + retries + " retries (MLX_NCCL_TIMEOUT=" + cfg.timeoutMs()
                        + " ms): " + reason(e) + "; is NCCL_HOST_IP reachable from this host?", e);
            } catch (IOException e) {
                throw new ConnectFailedException("rank " + cfg.rank() + " could not fetch the NCCL unique id from rank 0 at "
                        + where + " after " + retries + " retries (MLX_NCCL_TIMEOUT=" + cfg.timeoutMs() + " ms): "
                        + reason(e), e);
            }
        }
    }

    private static byte[] readId(NcclConfig cfg, InputStream in, String where) throws IOException {
        byte[] id = in.readNBytes(NcclApi.UNIQUE_ID_BYTES);
        if (id.length != NcclApi.UNIQUE_ID_BYTES) {
            throw new ConnectFailedException("rank " + cfg.rank() + ": rank 0 at " + where + " closed the connection after "
                    + id.length + " of the " + NcclApi.UNIQUE_ID_BYTES + " bytes of the NCCL unique id; is something "
                    + "other than an MLX/jdist nccl rank 0 listening on NCCL_PORT?");
        }
        return id;
    }

    private static boolean isRefused(ConnectException e) {
        String m = e.getMessage();
        return m != null && m.toLowerCase(java.util.Locale.ROOT).contains("refused");
    }

    private static void sleep(NcclConfig cfg, String where) {
        try {
            Thread.sleep(RETRY_INTERVAL_MS);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new DistributedException("rank " + cfg.rank() + " was interrupted while waiting for rank 0 at " + where);
        }
    }

    /** The first IPv4 address of {@code NCCL_HOST_IP}, as MLX resolves it. */
    static InetAddress firstIpv4(NcclConfig cfg) {
        try {
            for (InetAddress a : InetAddress.getAllByName(cfg.hostIp())) {
                if (a instanceof Inet4Address) return a;
            }
            throw new ConfigException("NCCL_HOST_IP=" + cfg.hostIp() + " has no IPv4 address; the NCCL bootstrap is IPv4 "
                    + "only — set it to rank 0's IPv4 address");
        } catch (UnknownHostException e) {
            throw new ConfigException("NCCL_HOST_IP=" + cfg.hostIp() + " does not resolve (" + reason(e)
                    + "); set it to rank 0's IPv4 address", e);
        }
    }

    private static String reason(Throwable e) {
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }
}
