package dev.jdist.config;

import dev.jdist.console.ConsoleLog;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Explains the wiring in the user's terms: which cable is missing for a mesh (host and port), which cable is
 * miswired (looped back into the same Mac, or into a Mac that is not listed), and which links run at Thunderbolt 4
 * rather than 5.
 */
public final class WiringDiagnostics {
    private final ThunderboltTopology topology;

    public WiringDiagnostics(ThunderboltTopology topology) {
        this.topology = topology;
    }

    static String describe(ThunderboltTopology t, int host, ThunderboltPort port) {
        return t.name(host) + " " + port.iface() + (port.portName().equals(port.iface()) ? "" : " (" + port.portName() + ")");
    }

    /** INFO per cable with its speed; WARN for cables looped into the same Mac and for mixed Thunderbolt generations. */
    public void reportCables(ConsoleLog log) {
        int[] generations = new int[6];
        for (int i = 0; i < topology.size(); i++) {
            List<ThunderboltPort> ports = topology.hosts().get(i).ports();
            for (int p = 0; p < ports.size(); p++) {
                var peer = topology.peer(i, p);
                if (peer.isEmpty()) {
                    if (ports.get(p).peerUuid() != null) {
                        log.info(describe(topology, i, ports.get(p)) + " is cabled to a Mac that is not in the host list"
                                + " (Thunderbolt domain " + ports.get(p).peerUuid() + "); that cable is ignored");
                    }
                    continue;
                }
                if (peer.get().host() < i || (peer.get().host() == i && peer.get().port() < p)) {
                    continue; // each cable once
                }
                ThunderboltPort other = topology.port(peer.get());
                int gen = cableGeneration(ports.get(p), other);
                generations[gen]++;
                String cable = describe(topology, i, ports.get(p)) + " <-> " + describe(topology, peer.get().host(), other);
                if (peer.get().host() == i) {
                    log.warn("Cable " + cable + " loops back into the same Mac; it is never used. Plug that end into"
                            + " another host.");
                } else {
                    log.info("Cable " + cable + (gen == 0 ? "" : ": Thunderbolt " + gen + " ("
                            + slower(ports.get(p), other) + ")"));
                }
            }
        }
        if (generations[5] > 0 && generations[4] + generations[3] > 0) {
            log.warn("Some cables run at Thunderbolt 4 speed or lower while others run at Thunderbolt 5: "
                    + slowCables().stream().collect(Collectors.joining(", "))
                    + ". A link runs at the speed of its slower end (and RDMA needs Thunderbolt 5 on both ends);"
                    + " the slowest cable limits every collective.");
        }
    }

    private List<String> slowCables() {
        List<String> slow = new ArrayList<>();
        for (IpPlanCable c : cables()) {
            int gen = cableGeneration(c.a(), c.b());
            if (gen > 0 && gen < 5) {
                slow.add(describe(topology, c.hostA(), c.a()) + " <-> " + describe(topology, c.hostB(), c.b())
                        + " (Thunderbolt " + gen + ")");
            }
        }
        return slow;
    }

    private record IpPlanCable(int hostA, ThunderboltPort a, int hostB, ThunderboltPort b) {
    }

    private List<IpPlanCable> cables() {
        List<IpPlanCable> cables = new ArrayList<>();
        for (int i = 0; i < topology.size(); i++) {
            List<ThunderboltPort> ports = topology.hosts().get(i).ports();
            for (int p = 0; p < ports.size(); p++) {
                var peer = topology.peer(i, p);
                if (peer.isPresent() && (peer.get().host() > i || (peer.get().host() == i && peer.get().port() > p))) {
                    cables.add(new IpPlanCable(i, ports.get(p), peer.get().host(), topology.port(peer.get())));
                }
            }
        }
        return cables;
    }

    static int cableGeneration(ThunderboltPort a, ThunderboltPort b) {
        int ga = a.generation();
        int gb = b.generation();
        if (ga == 0 || gb == 0) {
            return Math.max(ga, gb); // one end unknown: the other end's, or 0
        }
        return Math.min(ga, gb);
    }

    private static String slower(ThunderboltPort a, ThunderboltPort b) {
        if (a.speed() == null) {
            return b.speed();
        }
        if (b.speed() == null) {
            return a.speed();
        }
        return ThunderboltPort.gigabits(a.speed()) <= ThunderboltPort.gigabits(b.speed()) ? a.speed() : b.speed();
    }

    /** For a host without RDMA: a note when its ports are Thunderbolt 4 or older (RDMA needs Thunderbolt 5). */
    static Optional<String> thunderbolt4Note(ThunderboltTopology topology, int host) {
        List<ThunderboltPort> ports = topology.hosts().get(host).ports();
        int best = ports.stream().mapToInt(ThunderboltPort::generation).max().orElse(0);
        if (best > 0 && best < 5) {
            String speed = ports.stream().filter(p -> p.generation() == best).findFirst().map(ThunderboltPort::speed).orElse("");
            return Optional.of("  " + topology.name(host) + " has Thunderbolt " + best + " ports (" + speed
                    + "): RDMA over Thunderbolt needs Thunderbolt 5 (80 Gb/s) Macs; use the ring backend"
                    + " (--backend ring) with this host");
        }
        return Optional.empty();
    }

    /** Every missing host pair with the free ports on each side, then the miswired cables. */
    public List<String> meshAdvice() {
        List<String> lines = new ArrayList<>();
        int[][] c = topology.connectivity();
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < c.length; i++) {
            for (int j = i + 1; j < c.length; j++) {
                if (c[i][j] <= 0 || c[j][i] <= 0) {
                    missing.add("  " + topology.name(i) + " <-> " + topology.name(j) + ": connect a free port of "
                            + topology.name(i) + " (" + freePorts(i) + ") to a free port of " + topology.name(j) + " ("
                            + freePorts(j) + ")");
                }
            }
        }
        if (!missing.isEmpty()) {
            lines.add("Missing cables for a full mesh (every pair of hosts needs a cable):");
            lines.addAll(missing);
        }
        lines.addAll(miswiring());
        return lines;
    }

    /** Cables looped back into their own Mac, and cables to Macs that are not in the host list. */
    public List<String> miswiring() {
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < topology.size(); i++) {
            List<ThunderboltPort> ports = topology.hosts().get(i).ports();
            for (int p = 0; p < ports.size(); p++) {
                var peer = topology.peer(i, p);
                ThunderboltPort port = ports.get(p);
                if (peer.isPresent() && peer.get().host() == i && peer.get().port() > p) {
                    lines.add("Miswired: " + describe(topology, i, port) + " is cabled to " + topology.name(i)
                            + "'s own " + topology.port(peer.get()).iface() + "; move one end to the host it should reach");
                } else if (peer.isEmpty() && port.peerUuid() != null) {
                    lines.add("Note: " + describe(topology, i, port) + " is cabled to a Mac that is not in the host list"
                            + " (Thunderbolt domain " + port.peerUuid() + "); list that Mac in --hosts or move the cable");
                }
            }
        }
        return lines;
    }

    private String freePorts(int host) {
        List<ThunderboltPort> free = topology.unconnectedPorts(host);
        if (free.isEmpty()) {
            List<String> devices = topology.hosts().get(host).ports().stream().filter(p -> p.attached() != null)
                    .map(p -> p.iface() + " has " + p.attached()).toList();
            return "none free: every port is in use" + (devices.isEmpty() ? "" : "; " + String.join(", ", devices)
                    + " plugged in");
        }
        return free.stream().map(p -> p.iface() + (p.portName().equals(p.iface()) ? "" : " = " + p.portName()))
                .collect(Collectors.joining(", "));
    }
}
