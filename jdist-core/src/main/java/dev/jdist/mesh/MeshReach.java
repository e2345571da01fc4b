package dev.jdist.mesh;

import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Which members of a mesh can open connections to which (docs/reference/collectives.md §10.1): every member's
 * {@link PeerMesh#probe} outcomes, gathered over the ring, so every member holds the same table and reaches the same
 * verdict. The mesh is used only when it is {@link #complete()}: on a ring of point-to-point cables (MLX's Thunderbolt
 * ring) a rank reaches only its neighbours, and the group then keeps to the ring's own connections.
 *
 * @param size     the members
 * @param outcomes {@code size * size} codes, row p (member p's probes), column q: an {@link Outcome} ordinal
 */
public record MeshReach(int size, byte[] outcomes) {

    /** What one probe found. */
    public enum Outcome {
        REACHED("reached"),
        NO_ROUTE("no route to its address"),
        REFUSED("connection refused"),
        TIMED_OUT("no answer (timed out)"),
        FAILED("the connection failed");

        final String text;

        Outcome(String text) { this.text = text; }

        static Outcome of(IOException e) {
            String m = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
            if (e instanceof NoRouteToHostException || m.contains("unreachable") || m.contains("no route")) return NO_ROUTE;
            if (e instanceof ConnectException && m.contains("refused")) return REFUSED;
            if (m.contains("timed out")) return TIMED_OUT;
            return FAILED;
        }
    }

    public MeshReach {
        if (outcomes.length != size * size) {
            throw new IllegalArgumentException("reachability table of " + outcomes.length + " bytes for " + size + " members");
        }
        for (byte b : outcomes) {
            if (b < 0 || b >= Outcome.values().length) throw new IllegalArgumentException("reachability code " + b);
        }
    }

    /** Whether every member reached every member it probed. */
    public boolean complete() {
        for (byte b : outcomes) if (b != 0) return false;
        return true;
    }

    /** The pairs that failed, lower rank first: {@code {p, q}}. */
    public List<int[]> gaps() {
        List<int[]> gaps = new ArrayList<>();
        for (int p = 0; p < size; p++) {
            for (int q = 0; q < size; q++) if (outcomes[p * size + q] != 0) gaps.add(new int[] {p, q});
        }
        return gaps;
    }

    /**
     * For messages: how many pairs failed and the first three, e.g. {@code 1 pair of ranks cannot connect directly (rank 0
     * -> rank 2 at 192.168.0.18:40111: no route to its address)}.
     */
    public String describe(PeerMesh mesh) {
        List<int[]> gaps = gaps();
        if (gaps.isEmpty()) return "every rank reaches every other";
        List<String> parts = new ArrayList<>();
        for (int[] g : gaps.subList(0, Math.min(3, gaps.size()))) {
            parts.add("rank " + g[0] + " -> rank " + g[1] + " at " + mesh.member(g[1]).text() + ": "
                    + Outcome.values()[outcomes[g[0] * size + g[1]]].text);
        }
        int more = gaps.size() - parts.size();
        return gaps.size() + (gaps.size() == 1 ? " pair" : " pairs") + " of ranks cannot connect directly (" + String.join("; ", parts)
                + (more > 0 ? "; and " + more + " more" : "") + ")";
    }
}
