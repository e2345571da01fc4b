package dev.jdist.config;

import dev.jdist.hosts.HostEntry;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@code jdist config} was asked to do.
 *
 * @param over     "thunderbolt" or "ethernet"
 * @param backend  "ring", "jaccl", "jaccl-ring", or null for automatic
 * @param output   where to write the hostfile, or null to print it
 */
public record ConfigOptions(List<HostEntry> hosts, String over, String backend, boolean autoSetup, boolean dot,
        Path output, List<String> envs, boolean ignoreUnreachable, HostPlatform platform) {
    public ConfigOptions {
        hosts = List.copyOf(hosts);
        envs = List.copyOf(envs);
    }
}
