package dev.jdist.jaccl;

import com.fasterxml.jackson.databind.JsonNode;
import dev.jdist.ConfigException;
import dev.jdist.spi.StrictJson;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The JACCL device file (docs/reference/collectives.md §4.1): an {@code n × n} JSON matrix whose item
 * {@code [q][p]} names the ibverbs device(s) on host q that reach host p ({@code null}, a string,
 * or an array of strings). Shape errors are {@link ConfigException}s; the validity rules for a mesh
 * and a ring are answered by {@link #meshProblem()} and {@link #ringProblem()}.
 */
public final class DeviceMatrix {
    /** The mesh's limit on ranks. */
    public static final int MAX_MESH_RANKS = 8;
    /** The ring's limit on devices (connections) per direction. */
    public static final int MAX_RING_WIRES = 4;

    private final List<List<List<String>>> items;
    private final String source;

    private DeviceMatrix(List<List<List<String>>> items, String source) {
        this.items = items;
        this.source = source;
    }

    public int size() { return items.size(); }

    /** The devices of item {@code [q][p]}: empty for {@code null}. */
    public List<String> devices(int q, int p) { return items.get(q).get(p); }

    public String source() { return source; }

    /** Reads and checks the shape of the file named by {@code JACCL_IBV_DEVICES}/{@code MLX_IBV_DEVICES}. */
    public static DeviceMatrix read(Path file, String variable) {
        String text;
        try {
            text = StrictJson.readText(file, "the JACCL device file " + file + " (from " + variable + ")");
        } catch (NoSuchFileException e) {
            throw new ConfigException(variable + " names " + file + ", which does not exist; point it at the JACCL"
                    + " device-matrix JSON file (jdist launch --backend jaccl writes one)");
        } catch (IOException e) {
            throw new ConfigException("cannot read the JACCL device file " + file + " (from " + variable + "): " + e.getMessage(), e);
        }
        return parse(text, file + " (from " + variable + ")");
    }

    /** Parses the JSON text; {@code source} names where it came from in messages. */
    public static DeviceMatrix parse(String json, String source) {
        JsonNode root = StrictJson.parse(json, "the JACCL device file " + source,
                "expected an n×n array such as [[null,\"rdma_en2\"],[\"rdma_en2\",null]]");
        if (root == null || !root.isArray()) {
            throw shape(source, "the top level must be a JSON array of n rows, found " + kind(root));
        }
        int n = root.size();
        if (n == 0) throw shape(source, "it has no rows (one row per rank is needed)");
        List<List<List<String>>> rows = new ArrayList<>(n);
        for (int q = 0; q < n; q++) {
            JsonNode row = root.get(q);
            if (!row.isArray()) throw shape(source, "row " + q + " must be an array of " + n + " items, found " + kind(row));
            if (row.size() != n) {
                throw shape(source, "row " + q + " has " + row.size() + " items but there are " + n
                        + " rows; item [q][p] names host q's device(s) towards host p, so every row needs " + n + " items");
            }
            List<List<String>> parsed = new ArrayList<>(n);
            for (int p = 0; p < n; p++) {
                JsonNode item = row.get(p);
                List<String> devs = new ArrayList<>();
                if (item.isNull()) {
                    // no device
                } else if (item.isTextual()) {
                    devs.add(checkName(item.asText(), source, q, p));
                } else if (item.isArray()) {
                    for (JsonNode d : item) {
                        if (!d.isTextual()) {
                            throw shape(source, "item [" + q + "][" + p + "] must hold device names (strings), found " + kind(d));
                        }
                        devs.add(checkName(d.asText(), source, q, p));
                    }
                } else {
                    throw shape(source, "item [" + q + "][" + p + "] must be null, a device name or an array of device names, found " + kind(item));
                }
                parsed.add(List.copyOf(devs));
            }
            rows.add(List.copyOf(parsed));
        }
        return new DeviceMatrix(List.copyOf(rows), source);
    }

    private static String checkName(String name, String source, int q, int p) {
        if (name.isEmpty()) throw shape(source, "item [" + q + "][" + p + "] has an empty device name");
        return name;
    }

    private static ConfigException shape(String source, String what) {
        return new ConfigException("malformed JACCL device file " + source + ": " + what);
    }

    private static String kind(JsonNode node) {
        if (node == null || node.isMissingNode()) return "nothing";
        String text = node.toString();
        if (text.length() > 60) text = text.substring(0, 57) + "...";
        return node.getNodeType().toString().toLowerCase(java.util.Locale.ROOT) + " " + text;
    }

    /** Why this is not a valid mesh, or empty when it is (the 8-rank limit is checked separately). */
    public Optional<String> meshProblem() {
        int n = size();
        if (n < 2) return Optional.of("a mesh needs at least 2 ranks, the file has " + n);
        for (int q = 0; q < n; q++) {
            for (int p = 0; p < n; p++) {
                boolean empty = devices(q, p).isEmpty();
                if (q == p && !empty) return Optional.of("diagonal item [" + q + "][" + q + "] must be null");
                if (q != p && empty) return Optional.of("item [" + q + "][" + p + "] is empty, so host " + q + " cannot reach host " + p);
            }
        }
        return Optional.empty();
    }

    /** Why this is not a valid ring, or empty when it is (the 4-device limit is checked separately). */
    public Optional<String> ringProblem() {
        int n = size();
        if (n < 2) return Optional.of("a ring needs at least 2 ranks, the file has " + n);
        int m = devices(0, 1).size();
        if (m < 1) return Optional.of("item [0][1] is empty, so rank 0 has no connection to its right neighbour");
        for (int r = 0; r < n; r++) {
            int left = (r - 1 + n) % n, right = (r + 1) % n;
            for (int nb : new int[]{left, right}) {
                if (devices(r, nb).size() != m) {
                    return Optional.of("item [" + r + "][" + nb + "] holds " + devices(r, nb).size() + " device(s) but item [0][1] holds "
                            + m + "; every rank needs the same number towards its left and right neighbour");
                }
            }
        }
        return Optional.empty();
    }

    /** The number of devices per direction of a valid ring ({@code m}). */
    public int ringWires() { return devices(0, 1).size(); }
}
