package dev.jdist.ring;

import dev.jdist.algo.AlgorithmPolicy;
import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobRendezvous;

import java.util.Map;
import java.util.Optional;

/**
 * The ring backend (docs/reference/collectives.md §3): TCP connections to the two ring neighbours, configured
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

    /**
     * When MLX peers may be in the ring (no job token, and the member probe did not find every member jdist), it runs MLX's ring whatever {@code JDIST_ALGO} or
     * {@code JDIST_ALGO_RULES} say (docs/reference/collectives.md §10.9): say so once rather than ignore them silently.
     */
    static void warnIfAlgorithmsAsked(Map<String, String> env) {
        for (String v : new String[] {AlgorithmPolicy.VARIABLE, AlgorithmPolicy.RULES_VARIABLE}) {
            String value = env.get(v);
            if (value != null && !value.isBlank() && !value.strip().equalsIgnoreCase("auto")) {
                System.err.println("jdist: " + v + "=" + value + " is ignored: this ring may have MLX peers, "
                        + "so it runs MLX's ring schedule (start the job with `jdist launch`, which sets a token, or set "
                        + "JDIST_JOB_TOKEN on every rank to use jdist's algorithms)");
            }
        }
    }

    /** The ring from a rendezvous: listeners bound first, the hostfile built in memory from the agreed table. */
    @Override
    public Optional<GroupImpl> join(boolean strict, JobRendezvous rendezvous) {
        return Optional.of(RingJoin.join(rendezvous));
    }
}
