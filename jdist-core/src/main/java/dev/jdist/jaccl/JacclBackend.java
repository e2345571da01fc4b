package dev.jdist.jaccl;

import dev.jdist.AllGatherFactory;
import dev.jdist.ConfigException;
import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobRendezvous;
import dev.jdist.spi.RankOffer;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The JACCL backend (docs/reference/collectives.md §4): RDMA through libibverbs, configured by
 * {@code MLX_RANK}, {@code MLX_IBV_DEVICES} and {@code MLX_JACCL_COORDINATOR} (or their
 * {@code JACCL_*} names) exactly as MLX's; {@code MLX_JACCL_RING} prefers the ring topology.
 * Available when the ibverbs library ({@code JDIST_JACCL_LIB}, default {@code libibverbs.so.1},
 * {@code librdma.dylib} on macOS) loads and every needed symbol resolves.
 */
public final class JacclBackend implements Backend {

    @Override
    public String name() { return "jaccl"; }

    @Override
    public boolean isAvailable() {
        return unavailableReason().isEmpty();
    }

    @Override
    public Optional<String> unavailableReason() {
        try {
            String lib = System.getenv("JDIST_JACCL_LIB");
            return Verbs.problem(lib == null || lib.isBlank() ? Verbs.defaultLibrary() : lib.trim());
        } catch (RuntimeException | LinkageError e) {
            return Optional.of(String.valueOf(e.getMessage()));
        }
    }

    @Override
    public Optional<GroupImpl> init(boolean strict, Map<String, String> env) {
        return init(strict, env, null);
    }

    /**
     * JACCL from a rendezvous (docs/clusters.md): the rank comes from the rendezvous, the device file still from
     * {@code MLX_IBV_DEVICES} (its absence: not configured), and the side channel's all-gathers go through the
     * rendezvous instead of the TCP coordinator.
     */
    @Override
    public Optional<GroupImpl> join(boolean strict, JobRendezvous rendezvous) {
        Map<String, String> env = new HashMap<>(rendezvous.env());
        env.put("JACCL_RANK", Integer.toString(rendezvous.rank()));   // read before MLX_RANK
        Optional<JacclConfig> found = JacclConfig.fromEnv(env, strict, true);
        if (found.isEmpty()) return Optional.empty();
        JacclConfig cfg = found.get();
        if (cfg.size() != rendezvous.size()) {
            throw new ConfigException("the JACCL device file " + cfg.devices().source() + " describes " + cfg.size() + " ranks but "
                    + rendezvous.description() + " has " + rendezvous.size() + "; give every rank a device file with one row per rank");
        }
        Optional<String> problem = Verbs.problem(cfg.library());
        if (problem.isPresent()) {
            if (!strict) return Optional.empty();
            throw new ConfigException("the jaccl backend was chosen (" + rendezvous.description() + ") but cannot run here: "
                    + problem.get());
        }
        rendezvous.agree(new RankOffer("jaccl", Map.of("JACCL topology", cfg.topology().name().toLowerCase(Locale.ROOT),
                "MLX_IBV_DEVICES rows", Integer.toString(cfg.size())), List.of(), List.of("jaccl")));
        AtomicInteger exchanges = new AtomicInteger();
        AllGatherFactory throughRendezvous = (rank, size) -> (src, bytesPerRank) -> {
            List<byte[]> all = rendezvous.exchange("jaccl-side-channel/" + exchanges.getAndIncrement(), src);
            byte[] out = new byte[size * bytesPerRank];
            for (int q = 0; q < size; q++) System.arraycopy(all.get(q), 0, out, q * bytesPerRank, bytesPerRank);
            return out;
        };
        return init(true, env, throughRendezvous);
    }

    /**
     * As {@link #init(boolean, Map)}, with MLX's custom side channel: {@code factory(rank, size)} is
     * called once and its function replaces the TCP star (no coordinator needed). Null for the default.
     */
    @Override
    public Optional<GroupImpl> init(boolean strict, Map<String, String> env, AllGatherFactory factory) {
        Optional<JacclConfig> found = JacclConfig.fromEnv(env, strict, factory != null);
        if (found.isEmpty()) return Optional.empty();
        JacclConfig cfg = found.get();
        Verbs verbs = Verbs.load(cfg.library());
        SideChannel side = factory != null ? SideChannel.custom(cfg.rank(), cfg.size(), factory)
                : TcpSideChannel.connect(cfg.rank(), cfg.size(), cfg.coordinatorHost(), cfg.coordinatorPort(), cfg.timeout(),
                System.err::println);
        try {
            RdmaTransport transport = VerbsTransport.connect(verbs, cfg, side);
            int wires = cfg.topology() == JacclConfig.Topology.RING ? cfg.devices().ringWires() : 0;
            return Optional.of(JacclGroup.over(cfg.rank(), cfg.size(), cfg.topology(), wires, cfg.timeout(), side, transport));
        } catch (RuntimeException e) {
            side.close();
            throw e;
        }
    }
}
