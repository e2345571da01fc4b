package dev.jdist.config;

import java.util.List;

/** The Thunderbolt wiring as a GraphViz graph ({@code docs/reference/distributed-config.md} §5), byte-compatible with MLX except that labels are escaped. */
public final class DotWriter {
    private DotWriter() {
    }

    public static String write(ThunderboltTopology topology) {
        StringBuilder out = new StringBuilder("graph G {\n  node [shape=rectangle];\n");
        for (int i = 0; i < topology.size(); i++) {
            out.append("  ").append(nodeId(i)).append(" [label=\"").append(escape(topology.name(i))).append("\"];\n");
        }
        for (int i = 0; i < topology.size(); i++) {
            List<ThunderboltPort> ports = topology.hosts().get(i).ports();
            for (int p = 0; p < ports.size(); p++) {
                var peer = topology.peer(i, p);
                if (peer.isEmpty() || peer.get().host() < i) {
                    continue;
                }
                out.append("  ").append(nodeId(i)).append(" -- ").append(nodeId(peer.get().host()))
                        .append(" [label=\"").append(escape(ports.get(p).iface())).append('/')
                        .append(escape(topology.port(peer.get()).iface())).append("\"]\n");
            }
        }
        return out.append("}\n").toString();
    }

    /** Host index in base 26 with digits a..z, least significant digit first: 0→a, 26→ab, 676→aab. */
    public static String nodeId(int index) {
        StringBuilder id = new StringBuilder();
        int v = index;
        do {
            id.append((char) ('a' + v % 26));
            v /= 26;
        } while (v > 0);
        return id.toString();
    }

    static String escape(String label) {
        return label.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
