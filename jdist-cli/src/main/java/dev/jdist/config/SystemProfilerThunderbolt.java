package dev.jdist.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.console.CliFailure;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reads a Mac's Thunderbolt receptacles from {@code system_profiler SPThunderboltDataType -json} and its
 * hardware-port map ({@link HardwarePorts}).
 */
public final class SystemProfilerThunderbolt {
    static final String COMMAND = "system_profiler SPThunderboltDataType -json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private SystemProfilerThunderbolt() {
    }

    /**
     * One port per bus entry that has a {@code domain_uuid_key}.
     *
     * @throws CliFailure naming the host and what is wrong when the document is not what macOS writes
     */
    public static HostWiring parse(String host, String json, Map<String, String> hardwarePorts) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JacksonException e) {
            throw CliFailure.of(1, "`" + COMMAND + "` on " + host + " did not print JSON ("
                    + e.getOriginalMessage() + "); run it on " + host + " by hand to see what it prints");
        }
        JsonNode buses = root == null ? null : root.get("SPThunderboltDataType");
        if (buses == null || !buses.isArray()) {
            throw CliFailure.of(1, "`" + COMMAND + "` on " + host
                    + " printed no SPThunderboltDataType array; is " + host + " a Mac with Thunderbolt ports?");
        }
        List<ThunderboltPort> ports = new ArrayList<>();
        int index = 0;
        for (JsonNode bus : buses) {
            index++;
            String uuid = text(bus.get("domain_uuid_key"));
            if (uuid == null) {
                continue;
            }
            String where = "Thunderbolt bus entry " + index + " (" + uuid + ") of " + host;
            if (text(bus.get("device_name_key")) == null) {
                throw CliFailure.of(1, where + " has no device_name_key in `" + COMMAND
                        + "`; the output does not look like macOS's");
            }
            JsonNode tag = bus.get("receptacle_1_tag");
            String receptacle = tag == null ? null : text(tag.get("receptacle_id_key"));
            if (receptacle == null) {
                throw CliFailure.of(1, where + " has no receptacle_1_tag.receptacle_id_key in `" + COMMAND
                        + "`; the output does not look like macOS's");
            }
            String portName = "Thunderbolt " + receptacle;
            String iface = hardwarePorts.get(portName);
            if (iface == null) {
                throw CliFailure.of(1, "`networksetup -listallhardwareports` on " + host + " lists no \""
                        + portName + "\" port (it lists " + String.join(", ", hardwarePorts.keySet())
                        + "); add the Thunderbolt ports in System Settings > Network, or check the host");
            }
            String peer = null;
            String attached = null;
            JsonNode items = bus.get("_items");
            if (items != null && items.isArray()) {
                for (JsonNode item : items) {
                    String id = text(item.get("domain_uuid_key"));
                    if (id != null) {
                        peer = id;
                        break;
                    }
                    if (attached == null) {
                        attached = text(item.get("_name")) != null ? text(item.get("_name")) : "a device";
                    }
                }
            }
            String speed = tag.has("current_speed_key") ? text(tag.get("current_speed_key")) : null;
            ports.add(new ThunderboltPort(iface, portName, uuid, peer, speed, peer == null ? attached : null));
        }
        return new HostWiring(host, ports);
    }

    private static String text(JsonNode node) {
        return node != null && node.isValueNode() && !node.isNull() ? node.asText() : null;
    }
}
