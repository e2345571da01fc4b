package dev.jdist.config;

import java.util.Comparator;
import java.util.List;

/**
 * The Thunderbolt receptacles of one host, sorted by interface name as strings ({@code en10} before
 * {@code en2}); that order drives every later "first" and numbering rule.
 */
public record HostWiring(String host, List<ThunderboltPort> ports) {
    public HostWiring {
        ports = ports.stream().sorted(Comparator.comparing(ThunderboltPort::iface)).toList();
    }
}
