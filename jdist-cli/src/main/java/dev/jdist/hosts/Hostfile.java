package dev.jdist.hosts;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.jdist.ConfigException;
import dev.jdist.console.CliFailure;
import dev.jdist.spi.StrictJson;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An MLX hostfile (docs/reference/launcher.md §2.4), read and written here only. It reads both forms MLX accepts: the list form (a
 * bare array of hosts) and the object form ({@code {"backend", "envs", "hosts"}}); parsing checks every type MLX
 * leaves unchecked, and each error names the file, the host index and the field. It writes the object form as
 * {@code jdist config} and {@code mlx.distributed_config} do ({@link #toJson()}).
 *
 * @param backend "" when the file names none (launch then chooses)
 */
public record Hostfile(String backend, List<String> envs, List<HostEntry> hosts) {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonMapper WRITER = JsonMapper.builder()
            .enable(JsonWriteFeature.ESCAPE_NON_ASCII) // json.dumps' ensure_ascii
            .disable(JsonWriteFeature.WRITE_HEX_UPPER_CASE) // and its lower-case hex digits
            .build();

    public Hostfile {
        envs = List.copyOf(envs);
        hosts = List.copyOf(hosts);
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
            text = StrictJson.readText(p, "the file");     // strict UTF-8, bounded: /dev/zero is an error, not a hang
        } catch (ConfigException e) {
            throw fail(path, e.getMessage());
        } catch (IOException e) {
            throw CliFailure.usage("Failed to parse hostfile " + path + " (cannot read it: " + e.getMessage() + ")");
        }
        return parse(path, text);
    }

    /** Parses hostfile text; {@code path} is only used in messages. */
    public static Hostfile parse(String path, String text) {
        JsonNode root;
        try {
            // one strict reader for every configuration file: trailing data, deep nesting, duplicate keys are errors
            root = StrictJson.parse(text, "the file", "");
        } catch (ConfigException e) {
            throw fail(path, e.getMessage());
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
        return new Hostfile(backend, envs, hosts);
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

    /**
     * The object form as JSON text, byte-compatible with Python's {@code json.dumps(doc, indent=4)}: keys in the order
     * {@code backend}, {@code envs}, {@code hosts}, every host with {@code ssh}, {@code ips}, {@code rdma}; 4-space
     * indentation, every array item and member on its own line, {@code ": "} after keys, {@code []} for empty arrays,
     * no trailing newline.
     */
    public String toJson() {
        var indenter = new DefaultIndenter("    ", "\n");
        Separators separators = Separators.createDefaultInstance()
                .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
                .withObjectEntrySpacing(Separators.Spacing.NONE)
                .withArrayValueSpacing(Separators.Spacing.NONE)
                .withArrayEmptySeparator("")
                .withObjectEmptySeparator("");
        DefaultPrettyPrinter printer = new DefaultPrettyPrinter(separators)
                .withArrayIndenter(indenter)
                .withObjectIndenter(indenter);
        StringWriter out = new StringWriter();
        try (JsonGenerator g = WRITER.getFactory().createGenerator(out)) {
            g.setPrettyPrinter(printer);
            g.writeStartObject();
            g.writeStringField("backend", backend);
            g.writeArrayFieldStart("envs");
            for (String e : envs) {
                g.writeString(e);
            }
            g.writeEndArray();
            g.writeArrayFieldStart("hosts");
            for (HostEntry h : hosts) {
                g.writeStartObject();
                g.writeStringField("ssh", h.ssh());
                g.writeArrayFieldStart("ips");
                for (String ip : h.ips()) {
                    g.writeString(ip);
                }
                g.writeEndArray();
                g.writeArrayFieldStart("rdma");
                for (Object item : h.rdma()) {
                    writeRdmaItem(g, item);
                }
                g.writeEndArray();
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    private static void writeRdmaItem(JsonGenerator g, Object item) throws IOException {
        switch (item) {
            case null -> g.writeNull();
            case String s -> g.writeString(s);
            case List<?> list -> {
                g.writeStartArray();
                for (Object o : list) {
                    writeRdmaItem(g, o);
                }
                g.writeEndArray();
            }
            default -> throw new IllegalArgumentException("rdma item must be null, a string or a list: " + item);
        }
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
