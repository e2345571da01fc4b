package dev.jdist.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import dev.jdist.ConfigException;
import dev.jdist.spi.StrictJson;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The ring's {@code MLX_HOSTFILE} (docs/reference/collectives.md §3.1): a JSON array with one entry per rank,
 * each a JSON array of {@code "host:port"} strings (a bare string is accepted as a one-address entry).
 * Everything is validated before any socket is opened; every problem is a {@link ConfigException}
 * naming the file and the offending item.
 *
 * <p>A ring formed without a file (a split's sub-ring, or ranks placed by other means) builds the record in
 * memory from its address lists, with {@code path} null.
 *
 * @param path  the file it was read from, or null when built in memory
 * @param ranks the address list of every rank, in rank order
 */
public record RingHostfile(Path path, List<List<Address>> ranks) {

    /** One {@code host:port} of the hostfile, resolved to an IPv4 socket address. */
    public record Address(String text, String host, int port, InetSocketAddress socketAddress) {
        @Override
        public String toString() { return text; }
    }

    /** Checks what a ring needs of any hostfile, read or built: ranks, each with addresses, as many as its neighbours. */
    public RingHostfile {
        String name = path == null ? "the in-memory ring hostfile" : "ring hostfile " + path;
        if (ranks.isEmpty()) throw new ConfigException(name + " lists no ranks; it needs one entry per rank");
        int n = ranks.size();
        for (int q = 0; q < n; q++) {
            if (ranks.get(q).isEmpty()) {
                throw new ConfigException(name + ": entry " + q + " (rank " + q + ") lists no addresses; "
                        + "each rank needs at least one \"host:port\"");
            }
        }
        for (int q = 0; q < n && n > 1; q++) {
            int next = (q + 1) % n;
            if (ranks.get(q).size() != ranks.get(next).size()) {
                throw new ConfigException(name + ": neighbouring ranks " + q + " and " + next + " list "
                        + ranks.get(q).size() + " and " + ranks.get(next).size() + " addresses; every rank must list the "
                        + "same number of addresses (one per connection to its neighbour)");
            }
            if (n == 2) break;
        }
        ranks = ranks.stream().map(List::copyOf).toList();
    }

    public int size() { return ranks.size(); }

    /** What messages call it: the file's path, or "the in-memory hostfile". */
    public String source() { return path == null ? "the in-memory hostfile" : path.toString(); }

    /** The address list A(q) of rank q. */
    public List<Address> addresses(int q) { return ranks.get(q); }

    /** Reads and validates the file at {@code path}. */
    public static RingHostfile read(Path path) {
        String text;
        try {
            text = StrictJson.readText(path, "ring hostfile " + path + " (MLX_HOSTFILE)");
        } catch (NoSuchFileException e) {
            throw new ConfigException("ring hostfile " + path + " (MLX_HOSTFILE) does not exist; point MLX_HOSTFILE at the "
                    + "JSON file listing every rank's addresses, or start the job with `jdist launch`");
        } catch (IOException e) {
            throw new ConfigException("cannot read ring hostfile " + path + " (MLX_HOSTFILE): " + e, e);
        }
        return parse(path, text);
    }

    /** Validates hostfile {@code text} (named {@code path} in messages). */
    public static RingHostfile parse(Path path, String text) {
        JsonNode root = StrictJson.parse(text, "ring hostfile " + path, "expected a JSON array with one array of "
                + "\"host:port\" strings per rank, e.g. [[\"127.0.0.1:32323\"], [\"127.0.0.1:32324\"]]");
        if (root == null || root.isMissingNode()) {
            throw new ConfigException("ring hostfile " + path + " is empty; expected a JSON array with one array of "
                    + "\"host:port\" strings per rank, e.g. [[\"127.0.0.1:32323\"], [\"127.0.0.1:32324\"]]");
        }
        if (!root.isArray()) {
            throw new ConfigException("ring hostfile " + path + ": the top level must be a JSON array with one entry per rank, "
                    + "got " + describe(root));
        }
        if (root.isEmpty()) {
            throw new ConfigException("ring hostfile " + path + " lists no ranks ([]); it needs one entry per rank, e.g. "
                    + "[[\"127.0.0.1:32323\"], [\"127.0.0.1:32324\"]]");
        }
        List<List<Address>> ranks = new ArrayList<>();
        for (int q = 0; q < root.size(); q++) {
            JsonNode entry = root.get(q);
            List<JsonNode> items = new ArrayList<>();
            if (entry.isTextual()) {
                items.add(entry);
            } else if (entry.isArray()) {
                entry.forEach(items::add);
            } else {
                throw new ConfigException("ring hostfile " + path + ": entry " + q + " (rank " + q + ") must be an array of "
                        + "\"host:port\" strings, got " + describe(entry));
            }
            if (items.isEmpty()) {
                throw new ConfigException("ring hostfile " + path + ": entry " + q + " (rank " + q + ") lists no addresses; "
                        + "each rank needs at least one \"host:port\"");
            }
            List<Address> addrs = new ArrayList<>();
            for (int j = 0; j < items.size(); j++) {
                JsonNode item = items.get(j);
                if (!item.isTextual()) {
                    throw new ConfigException("ring hostfile " + path + ": rank " + q + ", address " + j + " must be a "
                            + "\"host:port\" string, got " + describe(item));
                }
                addrs.add(parseAddress(path, q, j, item.asText()));
            }
            ranks.add(List.copyOf(addrs));
        }
        return new RingHostfile(path, List.copyOf(ranks));
    }

    /** Splits at the first ':' (MLX), resolves the host to its first IPv4 address. */
    static Address parseAddress(Path path, int rank, int index, String text) {
        String where = "ring hostfile " + path + ": rank " + rank + ", address " + index + " \"" + text + "\"";
        int colon = text.indexOf(':');
        if (colon < 0) {
            throw new ConfigException(where + " has no ':'; write it as \"host:port\", e.g. \"10.0.0.1:32323\"");
        }
        String host = text.substring(0, colon);
        String portText = text.substring(colon + 1);
        if (host.isEmpty() || host.startsWith("[") || portText.contains(":")) {
            throw new ConfigException(where + " is not an IPv4 \"host:port\" (IPv6 addresses are not supported by the "
                    + "ring, as in MLX); use an IPv4 address or a host name that resolves to one");
        }
        int port;
        try {
            // ASCII digits only: Integer.parseInt also takes other scripts' digits ("\u0668\u0660" = 80), which MLX does not
            if (!portText.matches("\\+?[0-9]+")) throw new NumberFormatException(portText);
            port = Integer.parseInt(portText);
        } catch (NumberFormatException e) {
            throw new ConfigException(where + ": port \"" + portText + "\" is not a number");
        }
        if (port < 1 || port > 65535) {
            throw new ConfigException(where + ": port " + port + " is outside 1..65535");
        }
        InetAddress[] all;
        try {
            all = InetAddress.getAllByName(host);
        } catch (UnknownHostException e) {
            throw new ConfigException(where + ": host \"" + host + "\" does not resolve; check the name or use an IPv4 address");
        }
        for (InetAddress a : all) {
            if (a instanceof Inet4Address) {
                return new Address(text, host, port, new InetSocketAddress(a, port));
            }
        }
        throw new ConfigException(where + ": host \"" + host + "\" resolves only to IPv6 addresses; the ring is IPv4 only "
                + "(as in MLX), use an IPv4 address");
    }

    private static String describe(JsonNode node) {
        String s = node.toString();
        if (s.length() > 60) s = s.substring(0, 57) + "...";
        return node.getNodeType().name().toLowerCase() + " " + s;
    }
}
