package dev.jdist.algo;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.jdist.ConfigException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Size rules for choosing an algorithm (docs/reference/collectives.md §10.9): an ordered list of {@link Rule}s, the first that
 * matches an operation wins, none matching means the ring. jdist's defaults are a rules file in its jar
 * ({@code dev/jdist/algo/default-rules.json}); {@code jdist bench --tune} writes one for a user's cluster, which a job
 * reads from {@code JDIST_ALGO_RULES} ahead of the defaults. Every file is validated as a hostfile is: each problem a
 * {@link ConfigException} naming the file, the rule and the field.
 *
 * <pre>
 * { "format": "jdist-algo-rules/1",
 *   "comment": "free text: where and when it was measured",
 *   "rules": [ { "op": "all_reduce", "algorithm": "rd", "minRanks": 3, "maxRanks": 16, "maxBytes": 4096, "hosts": "several" } ] }
 * </pre>
 *
 * @param source what messages call it ({@code JDIST_ALGO_RULES file /path}, {@code jdist's built-in rules})
 */
public record AlgorithmRules(String source, String comment, List<Rule> rules) {

    /** The value of {@code "format"}; a later incompatible format gets a new number. */
    public static final String FORMAT = "jdist-algo-rules/1";
    /** Where jdist's own defaults are, in its jar. */
    public static final String DEFAULTS_RESOURCE = "/dev/jdist/algo/default-rules.json";
    private static final long MAX_FILE_BYTES = 1 << 20;
    private static final Set<String> TOP_KEYS = Set.of("format", "comment", "rules");
    private static final Set<String> RULE_KEYS = Set.of("op", "algorithm", "minRanks", "maxRanks", "minBytes", "maxBytes", "hosts");
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** Which hosts a rule applies to. */
    public enum Hosts {
        ANY("any"), ONE("one"), SEVERAL("several");

        private final String text;

        Hosts(String text) { this.text = text; }

        public String text() { return text; }

        boolean matches(Topology t) {
            return this == ANY || (this == ONE) == t.oneHost();
        }
    }

    /**
     * One rule: {@code op} of {@code minBytes..maxBytes} bytes (inclusive; §10.9 says how each op's bytes are counted)
     * on {@code minRanks..maxRanks} ranks whose hosts are as {@code hosts} says uses {@code algorithm}.
     */
    public record Rule(CollectiveKind op, Algorithm algorithm, int minRanks, int maxRanks, long minBytes, long maxBytes,
                       Hosts hosts) {
        public Rule {
            if (!algorithm.supports(op)) throw new IllegalArgumentException(algorithm + " is not an " + op + " algorithm");
            if (minRanks < 2 || maxRanks < minRanks || minBytes < 0 || maxBytes < minBytes) {
                throw new IllegalArgumentException("rule ranges: ranks " + minRanks + ".." + maxRanks + ", bytes " + minBytes
                        + ".." + maxBytes);
            }
        }

        boolean matches(CollectiveKind kind, long bytes, Topology t) {
            return kind == op && t.ranks() >= minRanks && t.ranks() <= maxRanks && bytes >= minBytes && bytes <= maxBytes
                    && hosts.matches(t);
        }
    }

    public AlgorithmRules {
        rules = List.copyOf(rules);
        comment = comment == null ? "" : comment;
    }

    /** The first rule for an operation of {@code kind} and {@code bytes} on {@code topology}, or null. */
    public Rule match(CollectiveKind kind, long bytes, Topology topology) {
        for (Rule r : rules) if (r.matches(kind, bytes, topology)) return r;
        return null;
    }

    /** jdist's built-in rules. */
    public static AlgorithmRules defaults() { return Defaults.RULES; }

    private static final class Defaults {
        static final AlgorithmRules RULES = load();

        private static AlgorithmRules load() {
            try (InputStream in = AlgorithmRules.class.getResourceAsStream(DEFAULTS_RESOURCE)) {
                if (in == null) throw new IllegalStateException("jdist's jar lacks " + DEFAULTS_RESOURCE);
                return parse("jdist's built-in rules (" + DEFAULTS_RESOURCE + ")", new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new IllegalStateException("cannot read " + DEFAULTS_RESOURCE + ": " + e, e);
            }
        }
    }

    /** Reads and validates the rules file at {@code path} ({@code JDIST_ALGO_RULES}). */
    public static AlgorithmRules read(Path path) {
        String name = AlgorithmPolicy.RULES_VARIABLE + " file " + path;
        String text;
        try {
            if (Files.size(path) > MAX_FILE_BYTES) {
                throw new ConfigException(name + " is larger than " + MAX_FILE_BYTES + " bytes; a rules file holds a few dozen rules");
            }
            text = Files.readString(path);
        } catch (NoSuchFileException e) {
            throw new ConfigException(name + " does not exist; write one with `jdist bench --tune FILE` (on every host at the same "
                    + "path), or unset " + AlgorithmPolicy.RULES_VARIABLE + " for jdist's defaults");
        } catch (IOException e) {
            throw new ConfigException("cannot read " + name + ": " + e, e);
        }
        return parse(name, text);
    }

    /** Validates rules {@code text}; {@code name} is what messages call it. */
    public static AlgorithmRules parse(String name, String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            JsonLocation loc = e.getLocation();
            String where = loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
            throw new ConfigException(name + " is not valid JSON" + where + ": " + e.getOriginalMessage() + "; expected "
                    + example(), e);
        }
        if (root == null || root.isMissingNode() || !root.isObject()) {
            throw new ConfigException(name + ": expected a JSON object " + example() + ", got " + kindOf(root));
        }
        unknownKeys(name, "the top level", root, TOP_KEYS);
        JsonNode format = root.get("format");
        if (format == null || !format.isTextual() || !format.asText().equals(FORMAT)) {
            throw new ConfigException(name + ": \"format\" must be \"" + FORMAT + "\", got " + kindOf(format)
                    + " (a file written by another jdist release? write it again with `jdist bench --tune`)");
        }
        JsonNode comment = root.get("comment");
        if (comment != null && !comment.isTextual()) throw new ConfigException(name + ": \"comment\" must be a string, got " + kindOf(comment));
        JsonNode list = root.get("rules");
        if (list == null || !list.isArray()) throw new ConfigException(name + ": \"rules\" must be an array of rules, got " + kindOf(list));
        List<Rule> rules = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) rules.add(rule(name, i, list.get(i)));
        return new AlgorithmRules(name, comment == null ? "" : comment.asText(), rules);
    }

    private static Rule rule(String name, int i, JsonNode node) {
        String where = name + ": rule " + i;
        if (!node.isObject()) throw new ConfigException(where + " must be an object like " + exampleRule() + ", got " + kindOf(node));
        unknownKeys(name, "rule " + i, node, RULE_KEYS);
        JsonNode opNode = node.get("op");
        if (opNode == null || !opNode.isTextual()) {
            throw new ConfigException(where + ": \"op\" must be one of all_reduce, all_gather, sum_scatter, got " + kindOf(opNode));
        }
        CollectiveKind op = CollectiveKind.byName(opNode.asText());
        if (op == null) {
            throw new ConfigException(where + ": \"op\" must be one of all_reduce, all_gather, sum_scatter, got \"" + opNode.asText() + "\"");
        }
        JsonNode algoNode = node.get("algorithm");
        Algorithm algorithm = algoNode != null && algoNode.isTextual() ? Algorithm.byName(algoNode.asText()) : null;
        if (algorithm == null || !algorithm.supports(op)) {
            throw new ConfigException(where + ": \"algorithm\" must be one of " + Algorithm.namesFor(op) + " for " + op + ", got "
                    + kindOf(algoNode));
        }
        int minRanks = (int) number(where, node, "minRanks", 2, 2, 1 << 20);
        int maxRanks = (int) number(where, node, "maxRanks", Integer.MAX_VALUE, 2, Integer.MAX_VALUE);
        long minBytes = number(where, node, "minBytes", 0, 0, Long.MAX_VALUE);
        long maxBytes = number(where, node, "maxBytes", Long.MAX_VALUE, 0, Long.MAX_VALUE);
        if (maxRanks < minRanks) throw new ConfigException(where + ": \"maxRanks\" " + maxRanks + " is below \"minRanks\" " + minRanks);
        if (maxBytes < minBytes) throw new ConfigException(where + ": \"maxBytes\" " + maxBytes + " is below \"minBytes\" " + minBytes);
        Hosts hosts = Hosts.ANY;
        JsonNode hostsNode = node.get("hosts");
        if (hostsNode != null) {
            hosts = null;
            for (Hosts h : Hosts.values()) if (hostsNode.isTextual() && h.text.equals(hostsNode.asText())) hosts = h;
            if (hosts == null) {
                throw new ConfigException(where + ": \"hosts\" must be \"any\", \"one\" (every rank on one host) or \"several\", got "
                        + kindOf(hostsNode));
            }
        }
        return new Rule(op, algorithm, minRanks, maxRanks, minBytes, maxBytes, hosts);
    }

    private static long number(String where, JsonNode node, String key, long absent, long min, long max) {
        JsonNode v = node.get(key);
        if (v == null) return absent;
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < min || v.asLong() > max) {
            throw new ConfigException(where + ": \"" + key + "\" must be a whole number from " + min + " to " + max + ", got " + kindOf(v));
        }
        return v.asLong();
    }

    private static void unknownKeys(String name, String where, JsonNode obj, Set<String> allowed) {
        for (Iterator<String> it = obj.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!allowed.contains(k)) {
                throw new ConfigException(name + ": " + where + " has an unknown field \"" + k + "\"; allowed: "
                        + String.join(", ", allowed.stream().sorted().toList()));
            }
        }
    }

    private static String kindOf(JsonNode n) {
        if (n == null || n.isMissingNode()) return "nothing";
        if (n.isTextual()) return "\"" + n.asText() + "\"";
        if (n.isValueNode()) return n.toString();
        return n.isArray() ? "an array" : "an object";
    }

    private static String example() {
        return "{\"format\": \"" + FORMAT + "\", \"rules\": [" + exampleRule() + ", ...]}";
    }

    private static String exampleRule() {
        return "{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"maxBytes\": 4096}";
    }

    /** The rules as a file {@link #parse} reads back (what {@code jdist bench --tune} writes). */
    public String toJson() {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", FORMAT);
        if (!comment.isEmpty()) root.put("comment", comment);
        ArrayNode list = root.putArray("rules");
        for (Rule r : rules) {
            ObjectNode o = list.addObject();
            o.put("op", r.op().text());
            o.put("algorithm", r.algorithm().text());
            if (r.minRanks() != 2) o.put("minRanks", r.minRanks());
            if (r.maxRanks() != Integer.MAX_VALUE) o.put("maxRanks", r.maxRanks());
            if (r.minBytes() != 0) o.put("minBytes", r.minBytes());
            if (r.maxBytes() != Long.MAX_VALUE) o.put("maxBytes", r.maxBytes());
            if (r.hosts() != Hosts.ANY) o.put("hosts", r.hosts().text());
        }
        try {
            return JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(root) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
