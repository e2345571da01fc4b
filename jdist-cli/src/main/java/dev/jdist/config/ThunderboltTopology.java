package dev.jdist.config;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The cables between the listed hosts: each port's peer (host, port position) found by matching the
 * peer identity with the identity of every listed port, and the connectivity matrix.
 */
public final class ThunderboltTopology {

    /** A port: host index and position in that host's sorted port list. */
    public record PortRef(int host, int port) {
    }

    private final List<HostWiring> hosts;
    private final PortRef[][] peers;
    private final int[][] connectivity;

    public ThunderboltTopology(List<HostWiring> hosts) {
        this.hosts = List.copyOf(hosts);
        Map<String, PortRef> byUuid = new HashMap<>();
        for (int i = 0; i < hosts.size(); i++) {
            List<ThunderboltPort> ports = hosts.get(i).ports();
            for (int p = 0; p < ports.size(); p++) {
                byUuid.put(ports.get(p).uuid(), new PortRef(i, p)); // later wins
            }
        }
        int n = hosts.size();
        peers = new PortRef[n][];
        connectivity = new int[n][n];
        for (int i = 0; i < n; i++) {
            List<ThunderboltPort> ports = hosts.get(i).ports();
            peers[i] = new PortRef[ports.size()];
            for (int p = 0; p < ports.size(); p++) {
                String peer = ports.get(p).peerUuid();
                PortRef ref = peer == null ? null : byUuid.get(peer);
                peers[i][p] = ref;
                if (ref != null) {
                    connectivity[i][ref.host()]++;
                }
            }
        }
    }

    public List<HostWiring> hosts() {
        return hosts;
    }

    public int size() {
        return hosts.size();
    }

    public String name(int host) {
        return hosts.get(host).host();
    }

    public ThunderboltPort port(PortRef ref) {
        return hosts.get(ref.host()).ports().get(ref.port());
    }

    /** The port at the other end of the cable plugged into port {@code port} of host {@code host}, if it is a listed host's. */
    public Optional<PortRef> peer(int host, int port) {
        return Optional.ofNullable(peers[host][port]);
    }

    /** {@code c[i][j]} = number of ports of host i whose peer is a known port of host j. */
    public int[][] connectivity() {
        int[][] copy = new int[connectivity.length][];
        for (int i = 0; i < copy.length; i++) {
            copy[i] = connectivity[i].clone();
        }
        return copy;
    }

    /** Valid iff every ordered pair of different hosts has a cable (vacuously true for one host). */
    public boolean isFullMesh() {
        return firstMissingPair().isEmpty();
    }

    /** The first ordered pair (i, j), i != j, in (i, j) order, with no cable from i to j. */
    public Optional<int[]> firstMissingPair() {
        for (int i = 0; i < connectivity.length; i++) {
            for (int j = 0; j < connectivity.length; j++) {
                if (i != j && connectivity[i][j] <= 0) {
                    return Optional.of(new int[] {i, j});
                }
            }
        }
        return Optional.empty();
    }

    /** Ports of a host with nothing plugged in (free for a new cable), in interface order. */
    public List<ThunderboltPort> unconnectedPorts(int host) {
        List<ThunderboltPort> free = new ArrayList<>();
        List<ThunderboltPort> ports = hosts.get(host).ports();
        for (int p = 0; p < ports.size(); p++) {
            if (ports.get(p).peerUuid() == null && ports.get(p).attached() == null) {
                free.add(ports.get(p));
            }
        }
        return free;
    }
}
