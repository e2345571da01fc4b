package dev.jdist.ring;

import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobRendezvous;

import java.util.Map;
import java.util.Optional;

/**
 * The ring backend (spec collectives.md §3): TCP connections to the two ring neighbours, configured
 * by {@code MLX_RANK} and {@code MLX_HOSTFILE} exactly as MLX's ring, byte-compatible on the wire.
 * Always available; "not configured" when either variable is unset. Also starts from a rendezvous
 * ({@link #join}, docs/clusters.md) when the job was found another way.
 */
public final class RingBackend implements Backend {

    @Override
    public String name() { return "ring"; }

    @Override
    public boolean isAvailable() { return true; }

    @Override
    public Optional<GroupImpl> init(boolean strict, Map<String, String> env) {
        Optional<RingSettings> settings = RingSettings.fromEnvironment(strict, env);
        if (settings.isEmpty()) return Optional.empty();
        return Optional.of(RingGroup.connect(settings.get()));
    }

    /** The ring from a rendezvous: listeners bound first, the hostfile built in memory from the agreed table. */
    @Override
    public Optional<GroupImpl> join(boolean strict, JobRendezvous rendezvous) {
        return Optional.of(RingJoin.join(rendezvous));
    }
}
