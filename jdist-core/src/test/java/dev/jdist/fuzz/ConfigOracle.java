package dev.jdist.fuzz;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;

import java.io.IOException;
import java.io.StringReader;
import java.math.BigInteger;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What the configuration fuzzer calls valid, written from the documents (docs/reference/collectives.md §3.1,
 * §4.1, §6.1; docs/backends.md; docs/hostfiles.md) and not from jdist's parsers: JSON is checked with
 * Gson's strict reader, not Jackson, and every rule is restated here. A verdict is VALID (jdist must
 * accept), INVALID (jdist must reject with a ConfigException) or NOT_CONFIGURED (a non-strict init
 * must return nothing).
 */
final class ConfigOracle {

    /**
     * UNDECIDED: a case the documents leave open and jdist's answer is known to differ from MLX's (see
     * {@link #ringAddress}); only crashes and hangs count there.
     */
    enum Verdict { VALID, INVALID, NOT_CONFIGURED, UNDECIDED }

    /** Bounds documented for configuration JSON (docs/backends.md, "Configuration files"). */
    static final int MAX_DEPTH = 64;
    static final int MAX_NUMBER_CHARS = 64;
    static final int MAX_STRING_CHARS = 1 << 20;
    static final int MAX_BYTES = 16 << 20;

    private ConfigOracle() {}

    /** Thrown inside the oracle when an input is invalid; {@code why} helps when a disagreement is reported. */
    static class Invalid extends Exception {
        Invalid(String why) { super(why, null, false, false); }
    }

    /** An input the oracle cannot judge yet (an open question, reported): the verdict becomes UNDECIDED. */
    static final class Undecided extends Invalid {
        Undecided(String why) { super(why); }
    }

    /** A JSON {@code null} in the parsed tree (Java null means "absent"). */
    static final Object NULL = new Object() {
        @Override public String toString() { return "null"; }
    };

    // ------------------------------------------------------------------ files and JSON

    /**
     * The one JSON value of a configuration file: UTF-8 (one leading BOM allowed), at most MAX_BYTES,
     * one strict RFC 8259 value, nesting ≤ MAX_DEPTH, numbers ≤ MAX_NUMBER_CHARS characters, strings ≤
     * MAX_STRING_CHARS, no duplicate object keys. Returns List / Map / String / Number-as-String / Boolean /
     * NULL; {@code null} when the document is empty.
     */
    static Object jsonFile(byte[] bytes) throws Invalid {
        if (bytes.length > MAX_BYTES) throw new Invalid("too large");
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new Invalid("not UTF-8");
        }
        return jsonText(text);
    }

    static Object jsonText(String text) throws Invalid {
        if (text.startsWith("\uFEFF")) text = text.substring(1);
        try {
            JsonReader r = new JsonReader(new StringReader(text));
            r.setStrictness(Strictness.STRICT);
            r.setNestingLimit(Integer.MAX_VALUE);      // the depth rule is checked below
            if (r.peek() == JsonToken.END_DOCUMENT) return null;
            Object v = value(r, 1);
            if (r.peek() != JsonToken.END_DOCUMENT) throw new Invalid("trailing data");
            return v;
        } catch (java.io.EOFException e) {
            // Gson: an input of only whitespace ends before the first token
            if (text.isBlank()) return null;
            throw new Invalid("truncated: " + e.getMessage());
        } catch (IOException | IllegalStateException | NumberFormatException e) {
            throw new Invalid("JSON: " + e.getMessage());
        }
    }

    private static Object value(JsonReader r, int depth) throws IOException, Invalid {
        switch (r.peek()) {
            case BEGIN_ARRAY -> {
                if (depth > MAX_DEPTH) throw new Invalid("too deep");
                r.beginArray();
                List<Object> out = new ArrayList<>();
                while (r.hasNext()) out.add(value(r, depth + 1));
                r.endArray();
                return out;
            }
            case BEGIN_OBJECT -> {
                if (depth > MAX_DEPTH) throw new Invalid("too deep");
                r.beginObject();
                Map<String, Object> out = new LinkedHashMap<>();
                while (r.hasNext()) {
                    String k = r.nextName();
                    if (k.length() > MAX_STRING_CHARS) throw new Invalid("long key");
                    if (out.containsKey(k)) throw new Invalid("duplicate key " + k);
                    out.put(k, value(r, depth + 1));
                }
                r.endObject();
                return out;
            }
            case STRING -> {
                String s = r.nextString();
                if (s.length() > MAX_STRING_CHARS) throw new Invalid("long string");
                return s;
            }
            case NUMBER -> {
                String n = r.nextString();
                if (n.length() > MAX_NUMBER_CHARS) throw new Invalid("long number");
                return new Num(n);
            }
            case BOOLEAN -> { return r.nextBoolean(); }
            case NULL -> {
                r.nextNull();
                return NULL;
            }
            default -> throw new Invalid("unexpected " + r.peek());
        }
    }

    /** A JSON number, kept as its text. */
    record Num(String text) {}

    // ------------------------------------------------------------------ ring (docs/reference/collectives.md §3.1)

    /** The ring's hostfile: the rank count when valid. */
    static int ringHostfile(byte[] bytes) throws Invalid {
        Object root = jsonFile(bytes);
        if (!(root instanceof List<?> ranks) || ranks.isEmpty()) throw new Invalid("not a non-empty array");
        List<Integer> counts = new ArrayList<>();
        for (Object entry : ranks) {
            List<?> items = entry instanceof String ? List.of(entry) : entry instanceof List<?> l ? l : null;
            if (items == null || items.isEmpty()) throw new Invalid("entry is not a non-empty array of strings");
            for (Object a : items) {
                if (!(a instanceof String s)) throw new Invalid("address is not a string");
                ringAddress(s);
            }
            counts.add(items.size());
        }
        int n = counts.size();
        if (n == 2 && !counts.get(0).equals(counts.get(1))) throw new Invalid("neighbours differ");
        if (n > 2) {
            for (int q = 0; q < n; q++) if (!counts.get(q).equals(counts.get((q + 1) % n))) throw new Invalid("neighbours differ");
        }
        return n;
    }

    /** host:port split at the first ':'; port a number (an optional '+', ASCII digits) in 1..65535; host an IPv4 name. */
    static void ringAddress(String s) throws Invalid {
        int colon = s.indexOf(':');
        if (colon < 0) throw new Invalid("no colon");
        String host = s.substring(0, colon), port = s.substring(colon + 1);
        if (host.isEmpty() || host.startsWith("[") || port.contains(":")) throw new Invalid("not IPv4 host:port");
        String digits = port.startsWith("+") ? port.substring(1) : port;
        if (digits.isEmpty() || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) throw new Invalid("port not a number");
        BigInteger p = new BigInteger(digits);
        if (p.signum() <= 0 || p.compareTo(BigInteger.valueOf(65535)) > 0) throw new Invalid("port out of range");
        if (!resolvesToIpv4(host)) throw new Invalid("host does not resolve to IPv4");
    }

    /**
     * "resolved with the system resolver, first IPv4 result used": while fuzzing the resolver is
     * {@link OfflineResolverProvider} (localhost only); literals are the JDK's to judge.
     */
    static boolean resolvesToIpv4(String host) {
        try {
            for (InetAddress a : InetAddress.getAllByName(host)) if (a instanceof Inet4Address) return true;
            return false;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** MLX_RANK: a non-negative decimal integer (ASCII digits) that fits an int. */
    static int decimalRank(String v) throws Invalid {
        if (v.isEmpty() || !v.chars().allMatch(c -> c >= '0' && c <= '9')) throw new Invalid("rank not decimal");
        BigInteger b = new BigInteger(v);
        if (b.bitLength() > 31) throw new Invalid("rank too large");
        return b.intValue();
    }

    /** JDIST_TIMEOUT (docs/backends.md): seconds or a number with ms/s/m, 1 ms .. 7 days; blank = default. */
    static void timeout(String v) throws Invalid {
        if (v == null || v.isBlank()) return;
        String t = v.trim().toLowerCase(Locale.ROOT);
        int i = 0;
        while (i < t.length() && Character.isDigit(t.charAt(i)) && t.charAt(i) < 128) i++;
        if (i == 0) throw new Invalid("timeout: no number");
        if (i < t.length() && t.charAt(i) == '.') {
            int j = ++i;
            while (i < t.length() && t.charAt(i) >= '0' && t.charAt(i) <= '9') i++;
            if (i == j) throw new Invalid("timeout: no fraction digits");
        }
        String number = t.substring(0, i);
        while (i < t.length() && " \t\n\u000B\f\r".indexOf(t.charAt(i)) >= 0) i++;
        String unit = t.substring(i);
        double ms = switch (unit) {
            case "ms" -> Double.parseDouble(number);
            case "", "s" -> Double.parseDouble(number) * 1000;
            case "m" -> Double.parseDouble(number) * 60_000;
            default -> throw new Invalid("timeout: unit '" + unit + "'");
        };
        if (!(ms >= 1 && ms <= 7 * 24 * 3600_000.0)) throw new Invalid("timeout out of range");
    }

    /** The ring's environment (docs/reference/collectives.md §3.1, docs/backends.md "ring / Environment"). */
    static Verdict ringEnv(Map<String, String> env, boolean strict, byte[] hostfileBytes) {
        String rank = env.get("MLX_RANK"), hostfile = env.get("MLX_HOSTFILE");
        if (rank == null || hostfile == null) return strict ? Verdict.INVALID : Verdict.NOT_CONFIGURED;
        try {
            timeout(env.get("JDIST_TIMEOUT"));
            int r = decimalRank(rank);
            if (hostfile.isEmpty() || hostfileBytes == null) throw new Invalid("no hostfile");
            int n = ringHostfile(hostfileBytes);
            if (r >= n) throw new Invalid("rank >= size");
            String transport = env.get("JDIST_TRANSPORT");
            if (transport != null && !transport.isBlank()
                    && !Set.of("tcp", "shm").contains(transport.strip().toLowerCase(Locale.ROOT))) {
                throw new Invalid("transport");
            }
            String shm = env.get("JDIST_SHM_BUFFER_KIB");
            if (shm != null && !shm.isBlank()) {
                long k = javaLong(shm.strip());
                if (k < 4 || k > 8192 || Long.bitCount(k) != 1) throw new Invalid("shm buffer");
            }
            String spin = env.get("JDIST_RING_SPIN_US");
            if (spin != null && !spin.isBlank()) {
                long s = javaLong(spin.strip());
                if (s < 0 || s > 1_000_000) throw new Invalid("spin");
            }
            return Verdict.VALID;
        } catch (Undecided e) {
            return Verdict.UNDECIDED;
        } catch (Invalid e) {
            return Verdict.INVALID;
        }
    }

    /** A whole number as the ring's documented "number" (optional sign, ASCII digits, fits a long). */
    private static long javaLong(String s) throws Invalid {
        String d = s.startsWith("+") || s.startsWith("-") ? s.substring(1) : s;
        if (d.isEmpty() || !d.chars().allMatch(c -> c >= '0' && c <= '9')) throw new Invalid("not a number");
        BigInteger b = new BigInteger(s.startsWith("+") ? d : s);
        if (b.bitLength() > 63) throw new Invalid("too large");
        return b.longValue();
    }

    // ------------------------------------------------------------------ JACCL (docs/reference/collectives.md §4.1)

    /** The device matrix: items as lists of device names. */
    static List<List<List<String>>> deviceMatrix(byte[] bytes) throws Invalid {
        Object root = jsonFile(bytes);
        if (!(root instanceof List<?> rows) || rows.isEmpty()) throw new Invalid("not a non-empty array");
        int n = rows.size();
        List<List<List<String>>> out = new ArrayList<>();
        for (Object row : rows) {
            if (!(row instanceof List<?> items) || items.size() != n) throw new Invalid("row shape");
            List<List<String>> r = new ArrayList<>();
            for (Object item : items) {
                List<String> devs = new ArrayList<>();
                if (item == NULL) {
                    // no device
                } else if (item instanceof String s) {
                    if (s.isEmpty()) throw new Invalid("empty name");
                    devs.add(s);
                } else if (item instanceof List<?> l) {
                    for (Object d : l) {
                        if (!(d instanceof String s) || s.isEmpty()) throw new Invalid("device name");
                        devs.add(s);
                    }
                } else {
                    throw new Invalid("item type");
                }
                r.add(devs);
            }
            out.add(r);
        }
        return out;
    }

    static Verdict jacclEnv(Map<String, String> env, boolean strict, boolean custom, byte[] deviceBytes) {
        String rank = first(env, "JACCL_RANK", "MLX_RANK");
        String devs = first(env, "JACCL_IBV_DEVICES", "MLX_IBV_DEVICES");
        String coord = first(env, "JACCL_COORDINATOR", "MLX_JACCL_COORDINATOR");
        if (rank == null || devs == null || (!custom && coord == null)) return strict ? Verdict.INVALID : Verdict.NOT_CONFIGURED;
        try {
            String rt = rank.trim();
            if (rt.isEmpty() || rt.length() > 9 || !rt.chars().allMatch(c -> c >= '0' && c <= '9')) throw new Invalid("rank");
            int r = Integer.parseInt(rt);
            if (deviceBytes == null) throw new Invalid("no device file");
            List<List<List<String>>> m = deviceMatrix(deviceBytes);
            int n = m.size();
            if (r >= n) throw new Invalid("rank >= n");
            if (!custom) hostPort(coord);
            boolean mesh = n >= 2, ring = n >= 2;
            for (int q = 0; q < n && mesh; q++) {
                for (int p = 0; p < n; p++) {
                    if ((q == p) != m.get(q).get(p).isEmpty()) mesh = false;
                }
            }
            int wires = n >= 2 ? m.get(0).get(1).size() : 0;
            if (wires < 1) ring = false;
            for (int q = 0; q < n && ring; q++) {
                if (m.get(q).get((q + n - 1) % n).size() != wires || m.get(q).get((q + 1) % n).size() != wires) ring = false;
            }
            boolean preferRing = env.containsKey("JACCL_RING") || env.containsKey("MLX_JACCL_RING");
            String topology = preferRing && ring ? "ring" : mesh ? "mesh" : ring ? "ring" : null;
            if (topology == null) return strict ? Verdict.INVALID : Verdict.NOT_CONFIGURED;
            if (topology.equals("mesh") && n > 8) throw new Invalid("mesh too large");
            if (topology.equals("ring") && wires > 4) throw new Invalid("too many wires");
            timeout(env.get("JDIST_TIMEOUT"));
            String qp = env.get("JDIST_JACCL_QP");
            if (qp != null && !qp.isBlank() && !Set.of("uc", "rc").contains(qp.trim().toLowerCase(Locale.ROOT))) {
                throw new Invalid("qp");
            }
            String gid = env.get("JDIST_JACCL_GID_INDEX");
            if (gid != null && !gid.isBlank()) {
                String g = gid.trim();
                if (g.isEmpty() || g.length() > 4 || !g.chars().allMatch(c -> c >= '0' && c <= '9')) throw new Invalid("gid");
            }
            return Verdict.VALID;
        } catch (Invalid e) {
            return Verdict.INVALID;
        }
    }

    /** ip:port or [v6]:port with a port of 1-5 ASCII digits in 1..65535 (split at the last ':'). */
    static void hostPort(String value) throws Invalid {
        String v = value.trim();
        int colon = v.lastIndexOf(':');
        if (colon < 0) throw new Invalid("no colon");
        String host = v.substring(0, colon), port = v.substring(colon + 1);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        if (host.isEmpty() || port.isEmpty() || port.length() > 5 || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new Invalid("host:port");
        }
        int p = Integer.parseInt(port);
        if (p < 1 || p > 65535) throw new Invalid("port range");
    }

    private static String first(Map<String, String> env, String a, String b) {
        String v = env.get(a);
        if (v != null && !v.isBlank()) return v;
        v = env.get(b);
        return v != null && !v.isBlank() ? v : null;
    }

    // ------------------------------------------------------------------ NCCL (docs/reference/collectives.md §6.1)

    static Verdict ncclEnv(Map<String, String> env, boolean strict) {
        for (String k : List.of("NCCL_HOST_IP", "NCCL_PORT", "MLX_RANK", "MLX_WORLD_SIZE")) {
            String v = env.get(k);
            if (v == null || v.isBlank()) return strict ? Verdict.INVALID : Verdict.NOT_CONFIGURED;
        }
        try {
            int port = asciiInt(env.get("NCCL_PORT").strip());
            if (port < 1 || port > 65535) throw new Invalid("port");
            int size = asciiInt(env.get("MLX_WORLD_SIZE").strip());
            if (size < 1) throw new Invalid("size");
            int rank = asciiInt(env.get("MLX_RANK").strip());
            if (rank < 0 || rank >= size) throw new Invalid("rank");
            String t = env.get("MLX_NCCL_TIMEOUT");
            if (t != null && !t.isBlank()) {
                String d = t.strip();
                if (!d.chars().allMatch(c -> c >= '0' && c <= '9') || new BigInteger(d).bitLength() > 63) throw new Invalid("ms");
            }
            timeout(env.get("JDIST_TIMEOUT"));
            return Verdict.VALID;
        } catch (Invalid e) {
            return Verdict.INVALID;
        }
    }

    /** A non-negative int written in ASCII digits. */
    private static int asciiInt(String s) throws Invalid {
        if (s.isEmpty() || !s.chars().allMatch(c -> c >= '0' && c <= '9')) throw new Invalid("not an int");
        BigInteger b = new BigInteger(s);
        if (b.bitLength() > 31) throw new Invalid("int range");
        return b.intValue();
    }

}
