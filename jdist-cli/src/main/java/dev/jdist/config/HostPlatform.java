package dev.jdist.config;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The host-side commands of {@code jdist config}: macOS ({@link MacOsPlatform}, MLX's commands byte for byte) or the
 * Linux extension of {@code docs/reference/distributed-config.md} §12 ({@link LinuxPlatform}). The analysis and the hostfile rules are
 * shared.
 */
public interface HostPlatform {
    /** Deadline of each data-collection call ({@code system_profiler} can take several seconds). */
    Duration CALL_DEADLINE = Duration.ofSeconds(60);

    String name();

    /** The host's primary IP, or empty when it could not be found. */
    Optional<String> primaryIp(RemoteCalls calls, String host);

    /** Every host's Thunderbolt receptacles and what their cables lead to, in host order. */
    List<HostWiring> wiring(RemoteCalls calls, List<String> hosts);

    /** The RDMA devices the host reports. */
    RdmaReport rdma(RemoteCalls calls, String host);

    /** The RDMA device name for {@code iface} on a host with report {@code report}, or null if it has none. */
    String rdmaDevice(RdmaReport report, String iface);

    /** The commands that give host {@code i} its addresses and routes from the plan, in order. */
    List<String> setupCommands(int i, IpPlan plan);

    /** How to turn RDMA on, for the message when a host has none. */
    String rdmaHelp();
}
