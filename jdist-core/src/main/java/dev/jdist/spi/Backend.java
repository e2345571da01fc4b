package dev.jdist.spi;

import java.util.Map;
import java.util.Optional;

/**
 * A backend plugin, found with {@link java.util.ServiceLoader}. {@link dev.jdist.Distributed} owns
 * selection and caching; a backend only knows whether it can start and how.
 */
public interface Backend {

    /** The library-level name: {@code ring}, {@code mpi}, {@code nccl} or {@code jaccl}. */
    String name();

    /**
     * Whether this process could instantiate the backend (library loads, symbols resolve).
     * Never throws and never touches the network.
     */
    boolean isAvailable();

    /**
     * Why {@link #isAvailable()} is false (the library that did not load, the missing device), or empty
     * when the backend is available. Never throws; {@code jdist doctor} prints it.
     */
    default Optional<String> unavailableReason() {
        return isAvailable() ? Optional.empty() : Optional.of("the '" + name() + "' backend is not available");
    }

    /**
     * Forms this process's group from the environment.
     *
     * @param strict when true, "not configured" is a {@link dev.jdist.ConfigException};
     *               when false it is an empty result
     * @param env    the environment to read (the process environment in production; tests pass maps)
     * @return the group, or empty when the backend is not configured and {@code strict} is false
     * @throws dev.jdist.DistributedException when the backend is configured but fails
     *         (bad hostfile, unreachable peer, bad rank) — whatever {@code strict} is
     */
    Optional<GroupImpl> init(boolean strict, Map<String, String> env);

    /**
     * As {@link #init(boolean, Map)} with a caller-supplied side channel (MLX's JACCL custom
     * all-gather). Only the {@code jaccl} backend takes one; the others reject it.
     */
    default Optional<GroupImpl> init(boolean strict, Map<String, String> env, dev.jdist.AllGatherFactory sideChannel) {
        throw new IllegalArgumentException("the '" + name() + "' backend takes no custom side channel; only 'jaccl' does");
    }

    /**
     * Forms this process's group for a job found through a rendezvous instead of the backend's own variables
     * (docs/clusters.md): bind what the backend listens on, {@link JobRendezvous#agree} with the others, connect.
     *
     * @param strict when true, "this backend cannot run here" is a {@link dev.jdist.ConfigException}; when false
     *               it is an empty result, and the caller tries the next backend (before anything was exchanged)
     * @return the group, or empty when the backend cannot start this way here and {@code strict} is false
     */
    default Optional<GroupImpl> join(boolean strict, JobRendezvous rendezvous) {
        if (!strict) return Optional.empty();
        throw new dev.jdist.ConfigException("the '" + name() + "' backend cannot start from a rendezvous (" + rendezvous.description()
                + "); use the ring or nccl backend, or start the job with the '" + name() + "' backend's own variables");
    }
}
