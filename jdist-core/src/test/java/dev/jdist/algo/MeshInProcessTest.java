package dev.jdist.algo;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.mesh.PeerMesh;
import dev.jdist.ring.RingGroup;
import dev.jdist.ring.RingTestSupport;
import dev.jdist.spi.GroupImpl;
import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mesh algorithms over real sockets (docs/reference/collectives.md §10): rings of n ranks in one JVM (a thread per rank) over
 * loopback, told that every member is jdist, run every op with each algorithm forced and with the default choice; every
 * rank checks its result against §10.4's value byte for byte, so every rank has the same bytes.
 */
@Timeout(300)
class MeshInProcessTest {

    @TempDir
    Path dir;

    /** Runs {@code body} on every rank of an in-process n-rank ring whose members are declared jdist with {@code env}. */
    private List<String> onJdistRing(int n, Map<String, String> env, java.util.function.Function<RingGroup, String> body)
            throws Exception {
        return onJdistRing(n, 1, env, body);
    }

    /** As above with {@code k} connections per neighbour. */
    private List<String> onJdistRing(int n, int k, Map<String, String> env, java.util.function.Function<RingGroup, String> body)
            throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, k);
        return RingTestSupport.onEveryRank(hf, n, Map.of(), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, env);
            return body.apply(rg);
        });
    }

    @ParameterizedTest(name = "{0} ranks, JDIST_ALGO={1}")
    @CsvSource({"2,rd", "3,rd", "3,rhd", "4,rhd", "5,rd", "5,rhd", "6,bruck", "7,rh", "8,rd", "8,rhd", "3,auto", "5,auto",
            "8,auto", "16,rd", "13,rhd", "3,ring", "2,ring1", "5,ring1", "16,ring1"})
    void everyOpEveryDtypeGivesTheDocumentedBytesOnEveryRank(int n, String algo) throws Exception {
        long seed = 7L * n + algo.hashCode();
        List<String> failures = onJdistRing(n, Map.of("JDIST_ALGO", algo), g -> MeshChecks.checkAll(g, seed, n <= 8)
                + (algo.equals("auto") ? MeshChecks.checkCrossovers(g, seed) : ""));
        assertThat(String.join("", failures)).isEmpty();
    }

    /**
     * The ring in both directions (MLX's parts) and in one (§10.12) at the sizes where the part count changes, on 1..3
     * connections: every rank's bytes against §3.6.4's and §9's order for the parts that direction count gives.
     */
    @ParameterizedTest(name = "{0} ranks, {1} connection(s), JDIST_ALGO={2}")
    @CsvSource({"2,1,ring1", "3,2,ring1", "3,2,ring", "4,1,ring"})
    void theRingInOneOrTwoDirectionsGivesTheDocumentedBytesAtEveryPartCount(int n, int k, String algo) throws Exception {
        ringPartsOnEveryRank(n, k, algo);
    }

    /** More ranks and connections: parts of up to tens of MiB per rank, all in this JVM, so in the long tier. */
    @LongTest
    @ParameterizedTest(name = "{0} ranks, {1} connection(s), JDIST_ALGO={2}")
    @CsvSource({"2,2,ring1", "5,3,ring1"})
    void theRingGivesTheDocumentedBytesAtEveryPartCountWithMoreRanksAndConnections(int n, int k, String algo) throws Exception {
        ringPartsOnEveryRank(n, k, algo);
    }

    private void ringPartsOnEveryRank(int n, int k, String algo) throws Exception {
        List<String> failures = onJdistRing(n, k, Map.of("JDIST_ALGO", algo), g -> {
            if (g.algorithmFor(CollectiveKind.ALL_REDUCE, 1 << 30).text().equals(algo)) return MeshChecks.checkRingParts(g, 11L * n + k);
            return "rank " + g.rank() + " chose " + g.algorithmFor(CollectiveKind.ALL_REDUCE, 1 << 30) + "\n";
        });
        assertThat(String.join("", failures)).isEmpty();
    }

    /**
     * One rank per host (hosts faked with {@code JDIST_HOST_ID}), default choice: the rules for several hosts, ring1 for
     * large messages; every op and dtype, the sizes around every default crossover and the ring's part counts, on every
     * rank against the documented order of whichever algorithm ran.
     */
    @Test
    void oneRankPerHostFollowsTheDefaultsForSeveralHosts() throws Exception {
        int n = 4;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        List<String> failures = RingTestSupport.onEveryRank(hf, n, Map.of(), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, Map.of("JDIST_HOST_ID", "host-" + g.rank()));
            String chosen = rg.algorithmFor(CollectiveKind.ALL_REDUCE, 4) + " " + rg.algorithmFor(CollectiveKind.ALL_REDUCE, 32768) + " "
                    + rg.algorithmFor(CollectiveKind.ALL_REDUCE, 1 << 20) + " " + rg.algorithmFor(CollectiveKind.SUM_SCATTER, 32768) + " "
                    + rg.algorithmFor(CollectiveKind.SUM_SCATTER, 1 << 17);
            return MeshChecks.checkAll(rg, 41, true) + MeshChecks.checkCrossovers(rg, 43) + MeshChecks.checkRingParts(rg, 47) + "|" + chosen;
        });
        assertThat(failures).containsOnly("|rd rhd ring1 rh ring1");
    }

    /**
     * Two ranks on one host, default choice: one exchange for small messages, the ring in one direction up to 16 MiB
     * (all_gather 8 MiB, sum_scatter every size), MLX's two directions above; values at every crossover, 16 MiB included.
     */
    @Test
    void twoRanksOnOneHostFollowTheDefaults() throws Exception {
        List<String> failures = onJdistRing(2, Map.of(), g -> {
            long mib16 = 16L << 20;
            String chosen = g.algorithmFor(CollectiveKind.ALL_REDUCE, 4) + " " + g.algorithmFor(CollectiveKind.ALL_REDUCE, 1 << 20)
                    + " " + g.algorithmFor(CollectiveKind.ALL_REDUCE, mib16) + " " + g.algorithmFor(CollectiveKind.ALL_REDUCE, mib16 + 4)
                    + " " + g.algorithmFor(CollectiveKind.ALL_GATHER, mib16 / 2) + " " + g.algorithmFor(CollectiveKind.ALL_GATHER, mib16 / 2 + 8)
                    + " " + g.algorithmFor(CollectiveKind.SUM_SCATTER, 1L << 30);
            return MeshChecks.checkAll(g, 53, true) + MeshChecks.checkCrossovers(g, 59) + "|" + chosen;
        });
        assertThat(failures).containsOnly("|rd ring1 ring1 ring ring1 ring ring1");
    }

    /**
     * Hosts faked with {@code JDIST_HOST_ID} (the host of rank q is {@code hosts[q]}): every op and dtype with the hierarchy
     * chosen by default or forced, values checked against §10.11's on every rank; and the layout every rank sees.
     */
    @ParameterizedTest(name = "hosts {0}, JDIST_ALGO={1}")
    @CsvSource({"0 0 0 1 1 1,auto", "0 0 1 1 1,hier", "0 1 0 1 2 2 2,auto", "0 1 0 1 2 2 2,hier-leader", "0 1 2 3,hier",
            "0 0 1 2 2,auto", "0 0 0 0,hier"})
    void hierarchyOverFakedHostsGivesTheDocumentedBytesOnEveryRank(String hosts, String algo) throws Exception {
        String[] hostOf = hosts.split(" ");
        int n = hostOf.length;
        Path hf = RingTestSupport.hostfile(dir, n, 1);
        List<String> failures = RingTestSupport.onEveryRank(hf, n, Map.of(), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, Map.of("JDIST_ALGO", algo, "JDIST_HOST_ID", "host-" + hostOf[g.rank()]));
            String layout = rg.hostLayout().orElseThrow().toString();
            String chosen = rg.algorithmFor(CollectiveKind.ALL_REDUCE, 4).text();
            return MeshChecks.checkAll(rg, 31L * n + hosts.hashCode(), n <= 5) + "|" + layout + "|" + chosen;
        });
        String wantLayout = dev.jdist.algo.HostLayout.ofHosts(java.util.Arrays.stream(hostOf).mapToInt(Integer::parseInt).toArray())
                .toString();
        String wantAlgo = algo.equals("auto") ? "hier" : algo;
        assertThat(failures).containsOnly("|" + wantLayout + "|" + wantAlgo);
    }

    @Test
    void aGroupWithoutTheJdistGuaranteeOpensNoMeshAndRunsTheRing() throws Exception {
        // no membersAreJdist: MLX peers may be present, so whatever JDIST_ALGO says, nothing but the ring
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 4, Map.of("JDIST_ALGO", "rd"), g -> {
            RingGroup rg = (RingGroup) g;
            Array x = Array.of(1f, 2f, 3f);
            Array sum = Array.zeros(DType.FLOAT32, 3);
            rg.allReduce(x, sum, ReduceOp.SUM);
            return rg.peerMesh().isPresent() + " " + rg.algorithmFor(CollectiveKind.ALL_REDUCE, 4) + " " + sum.getDouble(2);
        });
        assertThat(out).containsOnly("false ring 12.0");
    }

    @Test
    void meshConnectionsAreMadeOnDemandForThePeersAnAlgorithmNeeds() throws Exception {
        Map<String, String> env = new HashMap<>(Map.of("JDIST_ALGO", "rd", "JDIST_JOB_TOKEN", "s3cret"));
        List<String> out = onJdistRing(8, env, g -> {
            PeerMesh mesh = g.peerMesh().orElseThrow();
            int r = g.rank();
            String before = connected(mesh);
            Array x = Array.of((float) r);
            Array y = Array.zeros(DType.FLOAT32, 1);
            g.allReduce(x, y, ReduceOp.SUM);            // recursive doubling over 8: partners r^1, r^2, r^4
            boolean rdPartners = mesh.connection(r ^ 1) != null && mesh.connection(r ^ 2) != null && mesh.connection(r ^ 4) != null;
            g.useAlgorithmPolicy(AlgorithmPolicy.defaults().forcing(CollectiveKind.ALL_GATHER, Algorithm.BRUCK));
            Array all = Array.zeros(DType.FLOAT32, 8);
            g.allGather(x, all);                        // Bruck adds r-1 or r+1, and r±2 (r±4 is r^4)
            // (a member already in the next operation may connect early: counts between operations are not asserted)
            return before + " " + rdPartners + " " + connected(mesh).equals(expectedAfterBruck(r)) + " " + y.getDouble(0)
                    + " " + all.getDouble(7);
        });
        assertThat(out).containsOnly("[] true true 28.0 7.0");
    }

    private static String connected(PeerMesh mesh) {
        List<Integer> peers = new java.util.ArrayList<>();
        for (int q = 0; q < mesh.size(); q++) if (mesh.connection(q) != null) peers.add(q);
        return peers.toString();
    }

    private static String expectedAfterBruck(int r) {
        java.util.TreeSet<Integer> s = new java.util.TreeSet<>(List.of(r ^ 1, r ^ 2, r ^ 4));
        for (int d : new int[] {1, 2, 4}) {
            s.add(Math.floorMod(r - d, 8));
            s.add((r + d) % 8);
        }
        return s.toString();
    }

    @Test
    void onASharedMemoryRingTheRingIsChosenAndAForcedAlgorithmUsesSharedMemoryMeshPairs() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.isReadable(Path.of("/proc/sys/kernel/random/boot_id")),
                "JDIST_TRANSPORT=shm needs Linux's boot id");
        Path hf = RingTestSupport.hostfile(dir, 4, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 4, Map.of("JDIST_TRANSPORT", "shm"), g -> {
            RingGroup rg = (RingGroup) g;
            rg.membersAreJdist(null, Map.of());
            Array y = Array.zeros(DType.FLOAT32, 2);
            rg.allReduce(Array.of(1f, (float) g.rank()), y, ReduceOp.SUM);
            String auto = rg.transportName() + " " + rg.algorithmFor(CollectiveKind.ALL_REDUCE, 8) + " " + y.getDouble(1);
            rg.useAlgorithmPolicy(AlgorithmPolicy.defaults().forcing(CollectiveKind.ALL_REDUCE, Algorithm.RD));
            rg.allReduce(Array.of(1f, (float) g.rank()), y, ReduceOp.SUM);
            return auto + " | " + rg.algorithmFor(CollectiveKind.ALL_REDUCE, 8) + " " + y.getDouble(1) + " "
                    + rg.peerMesh().orElseThrow().openConnections() + " " + rg.peerMesh().orElseThrow().sharedMemoryConnections();
        });
        assertThat(out).containsOnly("shm ring 6.0 | rd 6.0 2 2");
    }

    @Test
    void differentAlgorithmSettingsFailEveryRankNamingThem() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 3, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 3, Map.of(), g -> {
            try {
                ((RingGroup) g).membersAreJdist(null, g.rank() == 2 ? Map.of("JDIST_ALGO", "rd") : Map.of());
                return "formed";
            } catch (RuntimeException e) {
                return e.getClass().getSimpleName() + ": " + e.getMessage();
            }
        });
        assertThat(out).allSatisfy(m -> assertThat(m).startsWith("ConfigException")
                .contains("JDIST_ALGO, JDIST_ALGO_RULES and JDIST_TRANSPORT").contains("jdist builds whose default rules differ")
                .contains("ranks [0, 1]").contains("ranks [2]"));
    }

    @Test
    void aSplitOfAJdistGroupHasItsOwnMesh() throws Exception {
        List<String> out = onJdistRing(6, Map.of("JDIST_ALGO", "rd"), g -> {
            GroupImpl sub = g.split(g.rank() % 2, g.rank());
            try {
                Array y = Array.zeros(DType.FLOAT32, 1);
                sub.allReduce(Array.of((float) g.rank()), y, ReduceOp.SUM);
                return ((RingGroup) sub).peerMesh().isPresent() + " " + y.getDouble(0);
            } finally {
                sub.close();
            }
        });
        assertThat(out).containsExactly("true 6.0", "true 9.0", "true 6.0", "true 9.0", "true 6.0", "true 9.0");
    }

}
