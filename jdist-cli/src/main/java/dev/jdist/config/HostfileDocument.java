package dev.jdist.config;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The hostfile {@code jdist config} writes: the object form of {@code launcher.md} §2.4 with keys in the order
 * {@code backend}, {@code envs}, {@code hosts}, and every host with {@code ssh}, {@code ips}, {@code rdma}.
 *
 * @param hosts each host's {@code rdma} items are null, a String, or a List of Strings
 */
public record HostfileDocument(String backend, List<String> envs, List<Host> hosts) {

    /** One rank of the hostfile. {@code rdma} items: null, a device name, or a list of device names. */
    public record Host(String ssh, List<String> ips, List<Object> rdma) {
        public Host {
            ips = List.copyOf(ips);
            rdma = java.util.Collections.unmodifiableList(new ArrayList<>(rdma)); // may hold nulls
        }
    }

    public HostfileDocument {
        envs = List.copyOf(envs);
        hosts = List.copyOf(hosts);
    }

    private static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(JsonWriteFeature.ESCAPE_NON_ASCII) // json.dumps' ensure_ascii
            .disable(JsonWriteFeature.WRITE_HEX_UPPER_CASE) // and its lower-case hex digits
            .build();

    /**
     * The JSON text, byte-compatible with Python's {@code json.dumps(doc, indent=4)}: 4-space indentation, every
     * array item and member on its own line, {@code ": "} after keys, {@code []} for empty arrays, no trailing newline.
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
        try (JsonGenerator g = MAPPER.getFactory().createGenerator(out)) {
            g.setPrettyPrinter(printer);
            g.writeStartObject();
            g.writeStringField("backend", backend);
            g.writeArrayFieldStart("envs");
            for (String e : envs) {
                g.writeString(e);
            }
            g.writeEndArray();
            g.writeArrayFieldStart("hosts");
            for (Host h : hosts) {
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
}
