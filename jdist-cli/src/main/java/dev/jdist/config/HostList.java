package dev.jdist.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The hosts {@code jdist config} works on: {@code --hosts} parsed as {@code launcher.md} §2.2, or the {@code ssh} and
 * {@code ips} of a {@code --hostfile} (§2.4; its {@code backend}, {@code envs} and {@code rdma} are ignored). Errors are
 * usage errors with the launcher's messages.
 */
public final class HostList {
    private static final Pattern IPV4 = Pattern.compile(
            "(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})");
    private static final ObjectMapper JSON = new ObjectMapper();

    private HostList() {
    }

    public static List<ConfigHost> fromHosts(String list) {
        List<ConfigHost> hosts = new ArrayList<>();
        for (String piece : list.split(",", -1)) {
            if (piece.isEmpty()) {
                throw ConfigFailure.usage("Hostname cannot be empty (in --hosts \"" + list
                        + "\"; separate names with single commas, no trailing comma)");
            }
            hosts.add(new ConfigHost(piece, isIpLiteral(piece) ? List.of(piece) : List.of()));
        }
        return hosts;
    }

    /** IPv4 dotted quad without leading zeros, or any IPv6 text form (never a DNS lookup). */
    public static boolean isIpLiteral(String s) {
        var m = IPV4.matcher(s);
        if (m.matches()) {
            for (int g = 1; g <= 4; g++) {
                if (Integer.parseInt(m.group(g)) > 255) {
                    return false;
                }
            }
            return true;
        }
        if (s.contains(":") && !s.startsWith("[")) {
            try {
                InetAddress.getByName(s); // a string with ':' is parsed as a literal, never resolved
                return true;
            } catch (UnknownHostException | SecurityException e) {
                return false;
            }
        }
        return false;
    }

    public static List<ConfigHost> fromHostfile(Path path) {
        if (!Files.exists(path)) {
            throw ConfigFailure.usage("Hostfile " + path + " doesn't exist");
        }
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(path));
        } catch (JacksonException e) {
            throw parseError(path, e.getOriginalMessage().replace('\n', ' '));
        } catch (IOException e) {
            throw parseError(path, "cannot read it: " + e.getMessage());
        }
        JsonNode hosts;
        if (root != null && root.isArray()) {
            hosts = root;
        } else if (root != null && root.isObject()) {
            hosts = root.get("hosts");
            if (hosts == null || !hosts.isArray()) {
                throw parseError(path, "the object has no \"hosts\" array");
            }
        } else {
            throw parseError(path, "expected an array of hosts or an object with \"hosts\"");
        }
        if (hosts.isEmpty()) {
            throw parseError(path, "no hosts");
        }
        List<ConfigHost> out = new ArrayList<>();
        for (int i = 0; i < hosts.size(); i++) {
            JsonNode h = hosts.get(i);
            if (!h.isObject()) {
                throw parseError(path, "host " + i + " is not an object");
            }
            JsonNode ssh = h.get("ssh");
            if (ssh == null || !ssh.isTextual() || ssh.asText().isEmpty()) {
                throw parseError(path, "host " + i + " needs \"ssh\", a non-empty string");
            }
            List<String> ips = new ArrayList<>();
            JsonNode ipsNode = h.get("ips");
            if (ipsNode != null && !ipsNode.isNull()) {
                if (!ipsNode.isArray()) {
                    throw parseError(path, "host " + i + " field \"ips\" must be an array of strings");
                }
                for (JsonNode ip : ipsNode) {
                    if (!ip.isTextual()) {
                        throw parseError(path, "host " + i + " field \"ips\" must be an array of strings");
                    }
                    ips.add(ip.asText());
                }
            }
            out.add(new ConfigHost(ssh.asText(), ips));
        }
        return out;
    }

    private static ConfigFailure parseError(Path path, String detail) {
        return ConfigFailure.usage("Failed to parse hostfile " + path + " (" + detail + ")");
    }
}
