package dev.jdist.config;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class IpPlanAndHostfileTest {

    private static final java.util.function.BiFunction<Integer, String, String> MAC_DEVICE = (h, iface) -> "rdma_" + iface;

    private static List<String> ends(List<IpPlan.LinkEnd> ends) {
        return ends.stream().map(e -> e.iface() + "=" + e.ip()).toList();
    }

    @Test
    void threeHostMeshPlan() {
        IpPlan plan = IpPlan.of(MacFixtures.topology("mesh3", "h0", "h1", "h2"));
        assertThat(ends(plan.links(0, 1))).containsExactly("en2=192.168.0.1");
        assertThat(ends(plan.links(1, 0))).containsExactly("en2=192.168.0.2");
        assertThat(ends(plan.links(0, 2))).containsExactly("en3=192.168.0.5");
        assertThat(ends(plan.links(2, 0))).containsExactly("en2=192.168.0.6");
        assertThat(ends(plan.links(1, 2))).containsExactly("en3=192.168.0.9");
        assertThat(ends(plan.links(2, 1))).containsExactly("en3=192.168.0.10");
        assertThat(plan.cables()).hasSize(3);
    }

    @Test
    void doubleCableRingPlan() {
        IpPlan plan = IpPlan.of(MacFixtures.topology("ring4", "r0", "r1", "r2", "r3"));
        assertThat(ends(plan.links(0, 1))).containsExactly("en2=192.168.0.1", "en3=192.168.0.5");
        assertThat(ends(plan.links(0, 3))).containsExactly("en4=192.168.0.9", "en5=192.168.0.13");
        assertThat(ends(plan.links(1, 2))).containsExactly("en4=192.168.0.17", "en5=192.168.0.21");
        assertThat(ends(plan.links(2, 3))).containsExactly("en4=192.168.0.25", "en5=192.168.0.29");
        assertThat(ends(plan.links(3, 2))).containsExactly("en2=192.168.0.26", "en3=192.168.0.30");
    }

    /** n hosts in a line with {@code cables} parallel cables between 0 and 1. */
    private static ThunderboltTopology parallelCables(int cables) {
        List<ThunderboltPort> a = new ArrayList<>();
        List<ThunderboltPort> b = new ArrayList<>();
        for (int k = 0; k < cables; k++) {
            String iface = String.format("en%06d", k);
            a.add(new ThunderboltPort(iface, "Thunderbolt " + k, "A" + k, "B" + k, null));
            b.add(new ThunderboltPort(iface, "Thunderbolt " + k, "B" + k, "A" + k, null));
        }
        return new ThunderboltTopology(List.of(new HostWiring("a", a), new HostWiring("b", b)));
    }

    @Test
    void sixtyFourCablesPerThirdOctet() {
        IpPlan plan = IpPlan.of(parallelCables(130));
        List<IpPlan.LinkEnd> a = plan.links(0, 1);
        assertThat(a.get(63).ip()).isEqualTo("192.168.0.253");
        assertThat(plan.links(1, 0).get(63).ip()).isEqualTo("192.168.0.254");
        assertThat(a.get(64).ip()).isEqualTo("192.168.1.1");
        assertThat(a.get(129).ip()).isEqualTo("192.168.2.5");
    }

    @Test
    void capacityIsExhaustedOnlyWhenACableNeedsMore() {
        assertThat(IpPlan.of(parallelCables(IpPlan.MAX_CABLES)).cables()).hasSize(16384);
        assertThat(IpPlan.of(parallelCables(IpPlan.MAX_CABLES)).links(0, 1).getLast().ip()).isEqualTo("192.168.255.253");
        assertThatThrownBy(() -> IpPlan.of(parallelCables(IpPlan.MAX_CABLES + 1)))
                .isInstanceOf(CliFailure.class).hasMessageContaining("Ran out of available local IPs");
    }

    @Test
    void ringHostfileOfTheSpecExampleByteForByte() {
        ThunderboltTopology t = MacFixtures.topology("two", "mac-a", "mac-b");
        Hostfile doc = Hostfiles.ring(MacFixtures.hosts("mac-a", "mac-b"), IpPlan.of(t),
                RingSearch.rings(t.connectivity()).getFirst(), List.of());
        assertThat(doc.toJson()).isEqualTo("""
                {
                    "backend": "ring",
                    "envs": [],
                    "hosts": [
                        {
                            "ssh": "mac-a",
                            "ips": [
                                "192.168.0.1"
                            ],
                            "rdma": []
                        },
                        {
                            "ssh": "mac-b",
                            "ips": [
                                "192.168.0.2"
                            ],
                            "rdma": []
                        }
                    ]
                }""");
    }

    @Test
    void jacclHostfileOfTheSpecExampleByteForByte() {
        ThunderboltTopology t = MacFixtures.topology("two", "mac-a", "mac-b");
        List<HostEntry> hosts = List.of(new HostEntry("mac-a", List.of("10.0.0.11")), new HostEntry("mac-b", List.of("10.0.0.12")));
        assertThat(Hostfiles.jaccl(hosts, IpPlan.of(t), MAC_DEVICE, List.of()).toJson()).isEqualTo("""
                {
                    "backend": "jaccl",
                    "envs": [],
                    "hosts": [
                        {
                            "ssh": "mac-a",
                            "ips": [
                                "10.0.0.11"
                            ],
                            "rdma": [
                                null,
                                "rdma_en2"
                            ]
                        },
                        {
                            "ssh": "mac-b",
                            "ips": [
                                "10.0.0.12"
                            ],
                            "rdma": [
                                "rdma_en3",
                                null
                            ]
                        }
                    ]
                }""");
    }

    @Test
    void threeHostMeshRingAndJacclRows() {
        ThunderboltTopology t = MacFixtures.topology("mesh3", "h0", "h1", "h2");
        IpPlan plan = IpPlan.of(t);
        List<HostEntry> hosts = MacFixtures.hosts("h0", "h1", "h2");
        Hostfile ring = Hostfiles.ring(hosts, plan, RingSearch.rings(t.connectivity()).getFirst(), List.of());
        assertThat(ring.hosts()).extracting(HostEntry::ssh).containsExactly("h0", "h1", "h2");
        assertThat(ring.hosts()).extracting(HostEntry::ips)
                .containsExactly(List.of("192.168.0.5"), List.of("192.168.0.2"), List.of("192.168.0.10"));
        Hostfile jaccl = Hostfiles.jaccl(hosts, plan, MAC_DEVICE, List.of());
        assertThat(jaccl.hosts()).extracting(HostEntry::rdma).containsExactly(
                java.util.Arrays.asList(null, "rdma_en2", "rdma_en3"),
                java.util.Arrays.asList("rdma_en2", null, "rdma_en3"),
                java.util.Arrays.asList("rdma_en2", "rdma_en3", null));
    }

    @Test
    void doubleCableRingHostfiles() {
        ThunderboltTopology t = MacFixtures.topology("ring4", "r0", "r1", "r2", "r3");
        IpPlan plan = IpPlan.of(t);
        RingSearch.Ring ring = RingSearch.rings(t.connectivity()).getFirst();
        List<HostEntry> hosts = MacFixtures.hosts("r0", "r1", "r2", "r3");
        assertThat(Hostfiles.ring(hosts, plan, ring, List.of()).hosts()).extracting(HostEntry::ips).containsExactly(
                List.of("192.168.0.9", "192.168.0.13"), List.of("192.168.0.2", "192.168.0.6"),
                List.of("192.168.0.18", "192.168.0.22"), List.of("192.168.0.26", "192.168.0.30"));
        List<Object> pairA = List.of("rdma_en2", "rdma_en3");
        List<Object> pairB = List.of("rdma_en4", "rdma_en5");
        assertThat(Hostfiles.jacclRing(hosts, plan, ring, MAC_DEVICE, List.of()).hosts()).extracting(HostEntry::rdma)
                .containsExactly(
                        java.util.Arrays.asList(null, pairA, null, pairB),
                        java.util.Arrays.asList(pairA, null, pairB, null),
                        java.util.Arrays.asList(null, pairA, null, pairB),
                        java.util.Arrays.asList(pairB, null, pairA, null));
        String json = Hostfiles.jacclRing(hosts, plan, ring, MAC_DEVICE, List.of("A=1")).toJson();
        assertThat(json).startsWith("{\n    \"backend\": \"jaccl-ring\",\n    \"envs\": [\n        \"A=1\"\n    ],\n")
                .contains("            \"rdma\": [\n                null,\n                [\n                    \"rdma_en2\",\n"
                        + "                    \"rdma_en3\"\n                ],\n                null,\n");
    }

    @Test
    void ringOrderCanDifferFromInputOrder() {
        // 4 hosts cabled 0-2, 2-1, 1-3, 3-0: ranks are host 0, host 2, host 1, host 3.
        List<HostWiring> w = List.of(
                new HostWiring("w0", List.of(port("en2", "W0a", "W2a"), port("en3", "W0b", "W3b"))),
                new HostWiring("w1", List.of(port("en2", "W1a", "W2b"), port("en3", "W1b", "W3a"))),
                new HostWiring("w2", List.of(port("en2", "W2a", "W0a"), port("en3", "W2b", "W1a"))),
                new HostWiring("w3", List.of(port("en2", "W3a", "W1b"), port("en3", "W3b", "W0b"))));
        ThunderboltTopology t = new ThunderboltTopology(w);
        RingSearch.Ring ring = RingSearch.rings(t.connectivity()).getFirst();
        Hostfile doc = Hostfiles.ring(MacFixtures.hosts("w0", "w1", "w2", "w3"), IpPlan.of(t), ring, List.of());
        assertThat(doc.hosts()).extracting(HostEntry::ssh).containsExactly("w0", "w2", "w1", "w3");
    }

    @Test
    void ethernetHostfileAndNonAsciiEscaping() {
        Hostfile doc = Hostfiles.ethernet(List.of(new HostEntry("h\u00e9", List.of("10.9.9.9", "10.0.0.99")),
                new HostEntry("b", List.of())), List.of());
        assertThat(doc.toJson()).isEqualTo("""
                {
                    "backend": "",
                    "envs": [],
                    "hosts": [
                        {
                            "ssh": "h\\u00e9",
                            "ips": [
                                "10.9.9.9",
                                "10.0.0.99"
                            ],
                            "rdma": []
                        },
                        {
                            "ssh": "b",
                            "ips": [],
                            "rdma": []
                        }
                    ]
                }""");
    }

    private static ThunderboltPort port(String iface, String uuid, String peer) {
        return new ThunderboltPort(iface, "Thunderbolt", uuid, peer, null);
    }
}
