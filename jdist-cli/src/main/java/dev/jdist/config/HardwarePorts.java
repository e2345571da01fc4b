package dev.jdist.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The hardware-port map of a Mac, parsed from {@code networksetup -listallhardwareports}: port name
 * ({@code "Thunderbolt 1"}, {@code "Ethernet"}) to BSD interface ({@code "en2"}, {@code "en0"}).
 */
public final class HardwarePorts {
    private static final String PORT = "Hardware Port: ";
    private static final String DEVICE = "Device: ";

    private HardwarePorts() {
    }

    /**
     * Reads the text line by line, each line trimmed: a {@code Hardware Port: } line names a port, the next
     * {@code Device: } line gives its interface. Other lines are ignored.
     */
    public static Map<String, String> parse(String text) {
        Map<String, String> ports = new LinkedHashMap<>();
        String pending = null;
        for (String raw : text.split("\n", -1)) {
            String line = raw.strip();
            if (line.startsWith(PORT)) {
                pending = line.substring(PORT.length());
            } else if (line.startsWith(DEVICE) && pending != null) {
                ports.put(pending, line.substring(DEVICE.length()));
                pending = null;
            }
        }
        return Collections.unmodifiableMap(ports);
    }
}
