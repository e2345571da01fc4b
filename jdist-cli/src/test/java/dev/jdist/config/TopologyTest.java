package dev.jdist.config;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class TopologyTest {

    private static RingSearch.Ring ring(int count, Integer... cycle) {
        return new RingSearch.Ring(List.of(cycle), count);
    }

    @Test
    void specExampleMatrixMeshAndRing() {
        ThunderboltTopology t = MacFixtures.topology("two", "mac-a", "mac-b");
        assertThat(t.connectivity()).isDeepEqualTo(new int[][] {{0, 1}, {1, 0}});
        assertThat(t.isFullMesh()).isTrue();
        assertThat(RingSearch.rings(t.connectivity())).containsExactly(ring(1, 0, 1));
    }

    @Test
    void ringsOfACompleteThreeMesh() {
        assertThat(RingSearch.rings(new int[][] {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}))
                .containsExactly(ring(1, 0, 1, 2), ring(1, 0, 1), ring(1, 0, 2), ring(1, 1, 2));
    }

    @Test
    void ringsWithTwoCablesBetweenZeroAndOne() {
        assertThat(RingSearch.rings(new int[][] {{0, 2, 1}, {2, 0, 1}, {1, 1, 0}}))
                .containsExactly(ring(1, 0, 1, 2), ring(2, 0, 1), ring(1, 0, 2), ring(1, 1, 2));
    }

    @Test
    void fourHostRingsKeepTheirDfsOrder() {
        int[][] square = new int[4][4];
        link(square, 0, 1); link(square, 1, 2); link(square, 2, 3); link(square, 3, 0);
        assertThat(RingSearch.rings(square).getFirst()).isEqualTo(ring(1, 0, 1, 2, 3));
        int[][] crossed = new int[4][4];
        link(crossed, 0, 2); link(crossed, 2, 1); link(crossed, 1, 3); link(crossed, 3, 0);
        assertThat(RingSearch.rings(crossed).getFirst()).isEqualTo(ring(1, 0, 2, 1, 3));
    }

    @Test
    void aLineIsNoFullRing() {
        int[][] line = new int[3][3];
        link(line, 0, 1); link(line, 1, 2);
        List<RingSearch.Ring> rings = RingSearch.rings(line);
        assertThat(rings).containsExactly(ring(1, 0, 1), ring(1, 1, 2));
        assertThat(RingSearch.isFullRing(rings, 3)).isFalse();
    }

    @Test
    void selfLoopOnTheStartIsAOneCycle() {
        assertThat(RingSearch.rings(new int[][] {{2}})).containsExactly(ring(2, 0));
    }

    @Test
    void ringSearchIsDeterministicOnRandomMatrices() {
        java.util.Random random = new java.util.Random(6);
        for (int trial = 0; trial < 50; trial++) {
            int n = 2 + random.nextInt(5);
            int[][] c = new int[n][n];
            for (int i = 0; i < n; i++) {
                for (int j = i + 1; j < n; j++) {
                    if (random.nextInt(3) > 0) {
                        int k = 1 + random.nextInt(2);
                        c[i][j] = k;
                        c[j][i] = k;
                    }
                }
            }
            List<RingSearch.Ring> first = RingSearch.rings(c);
            assertThat(RingSearch.rings(c)).isEqualTo(first);
            for (RingSearch.Ring r : first) { // every recorded cycle is a real cycle, starting at its lowest host
                List<Integer> cyc = r.cycle();
                assertThat(cyc.getFirst()).isEqualTo(cyc.stream().mapToInt(Integer::intValue).min().orElseThrow());
                for (int k = 0; k < cyc.size(); k++) {
                    assertThat(c[cyc.get(k)][cyc.get((k + 1) % cyc.size())]).isGreaterThanOrEqualTo(r.count());
                }
            }
            for (int k = 1; k < first.size(); k++) {
                assertThat(first.get(k).cycle().size()).isLessThanOrEqualTo(first.get(k - 1).cycle().size());
            }
        }
    }

    @Test
    void fixturesHaveTheIntendedShapes() {
        ThunderboltTopology mesh4 = MacFixtures.topology("mesh4", "m0", "m1", "m2", "m3");
        assertThat(mesh4.isFullMesh()).isTrue();
        ThunderboltTopology broken = MacFixtures.topology("broken-mesh", "m0", "m1", "m2", "m3");
        assertThat(broken.firstMissingPair()).hasValueSatisfying(p -> assertThat(p).containsExactly(1, 3));
        assertThat(RingSearch.rings(broken.connectivity()).getFirst()).isEqualTo(ring(1, 0, 1, 2, 3));
        ThunderboltTopology ring4 = MacFixtures.topology("ring4", "r0", "r1", "r2", "r3");
        assertThat(ring4.connectivity()).isDeepEqualTo(new int[][] {{0, 2, 0, 2}, {2, 0, 2, 0}, {0, 2, 0, 2}, {2, 0, 2, 0}});
        assertThat(RingSearch.rings(ring4.connectivity()).getFirst()).isEqualTo(ring(2, 0, 1, 2, 3));
        ThunderboltTopology miswired = MacFixtures.topology("miswired", "h0", "h1", "h2");
        assertThat(miswired.connectivity()).isDeepEqualTo(new int[][] {{2, 1, 0}, {1, 0, 1}, {0, 1, 0}});
    }

    @Test
    void dotOfTheSpecExample() {
        assertThat(DotWriter.write(MacFixtures.topology("two", "mac-a", "mac-b"))).isEqualTo("""
                graph G {
                  node [shape=rectangle];
                  a [label="mac-a"];
                  b [label="mac-b"];
                  a -- b [label="en2/en3"]
                }
                """);
    }

    @Test
    void dotOfTheDoubleCableRing() {
        assertThat(DotWriter.write(MacFixtures.topology("ring4", "r0", "r1", "r2", "r3"))).isEqualTo("""
                graph G {
                  node [shape=rectangle];
                  a [label="r0"];
                  b [label="r1"];
                  c [label="r2"];
                  d [label="r3"];
                  a -- b [label="en2/en2"]
                  a -- b [label="en3/en3"]
                  a -- d [label="en4/en4"]
                  a -- d [label="en5/en5"]
                  b -- c [label="en4/en2"]
                  b -- c [label="en5/en3"]
                  c -- d [label="en4/en2"]
                  c -- d [label="en5/en3"]
                }
                """);
    }

    @Test
    void dotListsASelfLoopTwiceAndEscapesLabels() {
        String dot = DotWriter.write(new ThunderboltTopology(List.of(new HostWiring("a\"b\\c", List.of(
                new ThunderboltPort("en2", "Thunderbolt 1", "U1", "U2", null),
                new ThunderboltPort("en3", "Thunderbolt 2", "U2", "U1", null))))));
        assertThat(dot).isEqualTo("""
                graph G {
                  node [shape=rectangle];
                  a [label="a\\"b\\\\c"];
                  a -- a [label="en2/en3"]
                  a -- a [label="en3/en2"]
                }
                """);
    }

    @Test
    void nodeIdsAreBase26LeastSignificantFirst() {
        assertThat(List.of(0, 1, 25, 26, 27, 51, 52, 676)).map(DotWriter::nodeId)
                .containsExactly("a", "b", "z", "ab", "bb", "zb", "ac", "aab");
    }

    private static void link(int[][] c, int i, int j) {
        c[i][j]++;
        c[j][i]++;
    }
}
