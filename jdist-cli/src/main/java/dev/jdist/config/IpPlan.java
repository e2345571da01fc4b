package dev.jdist.config;

import dev.jdist.console.CliFailure;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Point-to-point /30 subnets for every Thunderbolt cable between listed hosts
 * ({@code docs/reference/distributed-config.md} §8): cable k, in discovery order, gets
 * {@code 192.168.⌊k/64⌋.(4·(k mod 64)+1)} on the end found first (the lower-index host) and
 * {@code ….(4·(k mod 64)+2)} on the other.
 */
public final class IpPlan {
    public static final String NETMASK = "255.255.255.252";
    /** 64 cables per third octet, third octets 0..255. */
    public static final int MAX_CABLES = 64 * 256;

    /** One end of a cable: the interface and the address it gets. */
    public record LinkEnd(String iface, String ip) {
    }

    /** A cable of the plan, its two ends in discovery order. */
    public record Cable(int hostA, LinkEnd endA, int hostB, LinkEnd endB) {
    }

    private final int n;
    private final List<List<List<LinkEnd>>> links; // links[i][j]
    private final List<Cable> cables;

    private IpPlan(int n, List<List<List<LinkEnd>>> links, List<Cable> cables) {
        this.n = n;
        this.links = links;
        this.cables = cables;
    }

    public static IpPlan of(ThunderboltTopology topology) {
        return of(topology, MAX_CABLES);
    }

    /** For tests: a plan with a smaller address capacity. */
    static IpPlan of(ThunderboltTopology topology, int capacity) {
        int n = topology.size();
        List<List<List<LinkEnd>>> links = new ArrayList<>();
        boolean[][] addressed = new boolean[n][];
        for (int i = 0; i < n; i++) {
            List<List<LinkEnd>> row = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                row.add(new ArrayList<>());
            }
            links.add(row);
            addressed[i] = new boolean[topology.hosts().get(i).ports().size()];
        }
        List<Cable> cables = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<ThunderboltPort> ports = topology.hosts().get(i).ports();
            for (int p = 0; p < ports.size(); p++) {
                var peer = topology.peer(i, p);
                if (peer.isEmpty() || addressed[i][p]) {
                    continue;
                }
                int k = cables.size();
                if (k >= capacity) {
                    throw CliFailure.of(1, "Ran out of available local IPs for the Thunderbolt cables: "
                            + capacity + " cables fit in 192.168.0.0/16 and this cluster has more");
                }
                int j = peer.get().host();
                int q = peer.get().port();
                String base = "192.168." + (k / 64) + ".";
                int y = 4 * (k % 64);
                LinkEnd a = new LinkEnd(ports.get(p).iface(), base + (y + 1));
                LinkEnd b = new LinkEnd(topology.port(peer.get()).iface(), base + (y + 2));
                links.get(i).get(j).add(a);
                links.get(j).get(i).add(b);
                addressed[i][p] = true;
                addressed[j][q] = true;
                cables.add(new Cable(i, a, j, b));
            }
        }
        return new IpPlan(n, links, Collections.unmodifiableList(cables));
    }

    /** The ends on host i of the cables between i and j, in plan order (parallel to {@code links(j, i)}). */
    public List<LinkEnd> links(int i, int j) {
        return Collections.unmodifiableList(links.get(i).get(j));
    }

    public List<Cable> cables() {
        return cables;
    }

    public int size() {
        return n;
    }
}
