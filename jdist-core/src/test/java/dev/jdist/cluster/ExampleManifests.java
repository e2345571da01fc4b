package dev.jdist.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The example manifests under {@code examples/kubernetes}, parsed (tests only: they cannot run on a cluster here). */
public final class ExampleManifests {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private ExampleManifests() {}

    /** The repository's {@code examples} folder (the first folder above the working directory that has one). */
    public static Path examples() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("examples/AllSum.java"))) dir = dir.getParent();
        if (dir == null) throw new IllegalStateException("no examples/AllSum.java above " + Path.of("").toAbsolutePath());
        return dir.resolve("examples");
    }

    /** Every YAML document of {@code examples/kubernetes/<name>}. */
    public static List<JsonNode> read(String name) {
        Path file = examples().resolve("kubernetes").resolve(name);
        List<JsonNode> docs = new ArrayList<>();
        try (var it = YAML.readerFor(JsonNode.class).<JsonNode>readValues(Files.readString(file))) {
            while (it.hasNext()) {
                JsonNode d = it.next();
                if (d != null && !d.isNull() && !d.isEmpty()) docs.add(d);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot parse " + file, e);
        }
        return docs;
    }

    /** The one document of {@code kind}. */
    public static JsonNode kind(List<JsonNode> docs, String kind) {
        List<JsonNode> found = docs.stream().filter(d -> kind.equals(d.path("kind").asText())).toList();
        if (found.size() != 1) throw new AssertionError("expected one " + kind + ", found " + found.size() + " in " + docs);
        return found.getFirst();
    }

    /**
     * A container's {@code env} as a map: plain values as they are, values from elsewhere ({@code valueFrom}, a
     * secret) as {@code <from:...>}.
     */
    public static Map<String, String> env(JsonNode container) {
        Map<String, String> m = new LinkedHashMap<>();
        for (JsonNode e : container.path("env")) {
            m.put(e.path("name").asText(), e.has("value") ? e.path("value").asText() : "<from:" + e.path("valueFrom") + ">");
        }
        return m;
    }
}
