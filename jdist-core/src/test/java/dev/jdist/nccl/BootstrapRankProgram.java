package dev.jdist.nccl;

import dev.jdist.DistributedException;

import java.util.HexFormat;
import java.util.Random;

/**
 * One rank of the docs/reference/collectives.md §6.3 bootstrap as its own process, configured by the real environment
 * (NCCL_HOST_IP, NCCL_PORT, MLX_RANK, MLX_WORLD_SIZE, MLX_NCCL_TIMEOUT). Rank 0 serves 128 bytes
 * made from the seed in args[0]. Prints {@code ID <hex> <ms>} and exits 0, or {@code ERROR <class>: <message>}
 * and exits 3.
 */
public final class BootstrapRankProgram {
    public static void main(String[] args) {
        long seed = Long.parseLong(args[0]);
        long start = System.nanoTime();
        try {
            NcclConfig cfg = NcclConfig.fromEnv(System.getenv(), true).orElseThrow();
            byte[] id = NcclBootstrap.exchange(cfg, () -> {
                byte[] b = new byte[128];
                new Random(seed).nextBytes(b);
                return b;
            });
            System.out.println("ID " + HexFormat.of().formatHex(id) + " " + (System.nanoTime() - start) / 1_000_000);
        } catch (DistributedException e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            System.exit(3);
        }
    }
}
