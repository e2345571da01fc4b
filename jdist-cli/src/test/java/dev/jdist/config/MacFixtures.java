package dev.jdist.config;

import dev.jdist.hosts.HostEntry;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The recorded macOS command outputs under {@code src/test/fixtures/config/SCENARIO/HOST/}. */
final class MacFixtures {
    static final Path ROOT = Path.of("src/test/fixtures/config").toAbsolutePath();

    private MacFixtures() {
    }

    static String read(String scenario, String host, String file) {
        try {
            return Files.readString(ROOT.resolve(scenario).resolve(host).resolve(file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static HostWiring wiring(String scenario, String host) {
        return SystemProfilerThunderbolt.parse(host, read(scenario, host, "system_profiler.json"),
                HardwarePorts.parse(read(scenario, host, "networksetup.txt")));
    }

    static ThunderboltTopology topology(String scenario, String... hosts) {
        List<HostWiring> wirings = new ArrayList<>();
        for (String h : hosts) {
            wirings.add(wiring(scenario, h));
        }
        return new ThunderboltTopology(wirings);
    }

    static List<HostEntry> hosts(String... names) {
        return java.util.Arrays.stream(names).map(n -> new HostEntry(n, List.of())).toList();
    }
}
