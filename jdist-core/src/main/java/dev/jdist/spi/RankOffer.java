package dev.jdist.spi;

import java.util.List;
import java.util.Map;

/**
 * What a backend adds to this rank's record when it starts from a rendezvous: its name, the settings every rank
 * must share, the ports it listens on (bound before they are published) and its capabilities.
 */
public record RankOffer(String backend, Map<String, String> settings, List<Integer> ports, List<String> capabilities) {
    public RankOffer {
        settings = settings == null ? Map.of() : Map.copyOf(settings);
        ports = ports == null ? List.of() : List.copyOf(ports);
        capabilities = capabilities == null ? List.of() : List.copyOf(capabilities);
    }
}
