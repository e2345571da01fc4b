package dev.jdist.launch;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.console.CliFailure;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An MLX hostfile: Form A (a bare array of hosts) or Form B ({@code {"backend", "envs", "hosts"}}).
 * Parsing checks every type MLX leaves unchecked; each error names the file, the host index and the field.
 */
public record Hostfile(List<HostEntry> hosts, String backend, List<String> envs) {

    private static final ObjectMapper JSON = new ObjectMapper();

    public Hostfile {
        hosts = List.copyOf(hosts);
        envs = List.copyOf(envs);
    }

    /** Reads and validates {@code path} (used as given, relative to the working directory). */
    public static Hostfile read(String path) {
        Path p = Path.of(path);
        if (!Files.exists(p)) {
            throw CliFailure.usage("Hostfile " + path + " doesn't exist; check the path (it is relative to "
                    + Path.of("").toAbsolutePath() + ")");
        }
        String text;
        try {
            text = Files.readString(p);
        } catch (IOException e) {
            throw CliFailure.usage("Failed to parse hostfile " + path + " (cannot read it: " + e.getMessage() + ")");
        }
        return parse(path, text);
    }

    /** Parses hostfile text; {@code path} is only used in messages. */
    public static Hostfile parse(String path, String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw fail(path, "not valid JSON: " + e.getOriginalMessage() + " at line " + e.getLocation().getLineNr()
                    + ", column " + e.getLocation().getColumnNr());
        }
        if (root == null || root.isMissingNode()) {
            throw fail(path, "the file is empty; expected a JSON array of hosts or an object with \"hosts\"");
        }
        JsonNode hostsNode;
        String backend = "";
        List<String> envs = new ArrayList<>();
        if (root.isArray()) {
            hostsNode = root;
        } else if (root.isObject()) {
            hostsNode = root.get("hosts");
            if (hostsNode == null) {
                throw fail(path, "missing field \"hosts\": the top-level object needs \"hosts\": [ {\"ssh\": ...}, ... ]");
            }
            if (!hostsNode.isArray()) {
                throw fail(path, "\"hosts\" must be an array of host objects, not " + kind(hostsNode));
            }
            JsonNode b = root.get("backend");
            if (b != null && !b.isNull()) {
                if (!b.isTextual()) {
                    throw fail(path, "\"backend\" must be a string, not " + kind(b));
                }
                backend = b.asText();
            } else if (b != null) {
                throw fail(path, "\"backend\" must be a string, not null");
            }
            JsonNode e = root.get("envs");
            if (e != null) {
                if (!e.isArray()) {
                    throw fail(path, "\"envs\" must be an array of \"NAME=VALUE\" strings, not " + kind(e));
                }
                for (int i = 0; i < e.size(); i++) {
                    if (!e.get(i).isTextual()) {
                        throw fail(path, "envs[" + i + "] must be a \"NAME=VALUE\" string, not " + kind(e.get(i)));
                    }
                    envs.add(e.get(i).asText());
                }
            }
        } else {
            throw fail(path, "the top level must be an array of hosts or an object with \"hosts\", not " + kind(root));
        }
        List<HostEntry> hosts = new ArrayList<>();
        for (int i = 0; i < hostsNode.size(); i++) {
            hosts.add(host(path, i, hostsNode.get(i)));
        }
        if (hosts.isEmpty()) {
            throw fail(path, "no hosts; list one host object per rank");
        }
        return new Hostfile(hosts, backend, envs);
    }

    private static HostEntry host(String path, int i, JsonNode h) {
        String where = "host " + i;
        if (!h.isObject()) {
            throw fail(path, where + " must be an object like {\"ssh\": \"node-a\", \"ips\": [\"10.0.0.1\"]}, not " + kind(h));
        }
        JsonNode ssh = h.get("ssh");
        if (ssh == null) {
            throw fail(path, where + " has no \"ssh\" field (the name or address ssh connects to)");
        }
        if (!ssh.isTextual() || ssh.asText().isEmpty()) {
            throw fail(path, where + ": \"ssh\" must be a non-empty string, not " + kind(ssh));
        }
        List<String> ips = new ArrayList<>();
        JsonNode ipsNode = h.get("ips");
        if (ipsNode != null) {
            if (!ipsNode.isArray()) {
                throw fail(path, where + " (" + ssh.asText() + "): \"ips\" must be an array of strings, not " + kind(ipsNode));
            }
            for (int k = 0; k < ipsNode.size(); k++) {
                if (!ipsNode.get(k).isTextual()) {
                    throw fail(path, where + " (" + ssh.asText() + "): ips[" + k + "] must be a string, not " + kind(ipsNode.get(k)));
                }
                ips.add(ipsNode.get(k).asText());
            }
        }
        List<Object> rdma = new ArrayList<>();
        JsonNode rdmaNode = h.get("rdma");
        if (rdmaNode != null) {
            if (!rdmaNode.isArray()) {
                throw fail(path, where + " (" + ssh.asText() + "): \"rdma\" must be an array, not " + kind(rdmaNode));
            }
            for (int k = 0; k < rdmaNode.size(); k++) {
                JsonNode item = rdmaNode.get(k);
                if (item.isNull()) {
                    rdma.add(null);
                } else if (item.isTextual()) {
                    rdma.add(item.asText());
                } else if (item.isArray()) {
                    List<String> names = new ArrayList<>();
                    for (int j = 0; j < item.size(); j++) {
                        if (!item.get(j).isTextual()) {
                            throw fail(path, where + " (" + ssh.asText() + "): rdma[" + k + "][" + j
                                    + "] must be a device name string, not " + kind(item.get(j)));
                        }
                        names.add(item.get(j).asText());
                    }
                    rdma.add(List.copyOf(names));
                } else {
                    throw fail(path, where + " (" + ssh.asText() + "): rdma[" + k
                            + "] must be null, a device name or an array of device names, not " + kind(item));
                }
            }
        }
        return new HostEntry(ssh.asText(), ips, rdma);
    }

    private static String kind(JsonNode n) {
        if (n.isNull()) {
            return "null";
        }
        if (n.isTextual()) {
            return "a string";
        }
        if (n.isNumber()) {
            return "a number";
        }
        if (n.isBoolean()) {
            return "a boolean";
        }
        if (n.isArray()) {
            return "an array";
        }
        if (n.isObject()) {
            return "an object";
        }
        return n.getNodeType().toString().toLowerCase();
    }

    private static CliFailure fail(String path, String detail) {
        return CliFailure.usage("Failed to parse hostfile " + path + " (" + detail + ")");
    }
}
