package dev.jdist.rendezvous;

import dev.jdist.spi.RankRecord;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/** The agreement check's verdicts and their wording, without sockets. */
class AgreementTest {

    static RankRecord rec(int rank, int size) {
        return new RankRecord(rank, "RANK", size, "WORLD_SIZE", "torchrun", "ring", "0.1.0", 1, "", "", "",
                Map.of("JDIST_TRANSPORT", "tcp"), "10.0.0." + (rank + 1), "node" + rank, 100 + rank, "boot" + rank, List.of(40000),
                List.of());
    }

    static List<RankRecord> table(int n, int odd, UnaryOperator<RankRecord> change) {
        List<RankRecord> t = new ArrayList<>();
        for (int q = 0; q < n; q++) t.add(q == odd ? change.apply(rec(q, n)) : rec(q, n));
        return t;
    }

    static List<RankRecord> all(int n, UnaryOperator<RankRecord> change) {
        List<RankRecord> t = new ArrayList<>();
        for (int q = 0; q < n; q++) t.add(change.apply(rec(q, n)));
        return t;
    }

    static RankRecord with(RankRecord r, int size, String token, String digest, String version, int wire, String transport) {
        return new RankRecord(r.rank(), r.rankSource(), size, r.sizeSource(), r.source(), r.backend(), version, wire, token, digest,
                digest.isEmpty() ? "" : "hostfile /h" + digest.charAt(0) + ".json", Map.of("JDIST_TRANSPORT", transport), r.host(),
                r.hostname(), r.pid(), r.bootId(), r.ports(), r.capabilities());
    }

    @Test
    void anAgreeingTableHasNoError() {
        assertThat(Agreement.judgeTable(table(4, -1, r -> r), "x")).isEmpty();
    }

    @Test
    void theWorldSizeNamesTheMinorityAndTheOthers() {
        assertThat(Agreement.judgeTable(table(8, 5, r -> with(r, 4, "", "", "0.1.0", 1, "tcp")), "x"))
                .hasValue("rank 5 (node5) was started with WORLD_SIZE=4, the others with 8 (every rank must be started with the "
                        + "same world size)");
    }

    @Test
    void severalMinoritiesAndPlurals() {
        List<RankRecord> t = table(6, -1, r -> r);
        t.set(1, with(t.get(1), 6, "", "", "0.2.0", 1, "tcp"));
        t.set(4, with(t.get(4), 6, "", "", "0.2.0", 1, "tcp"));
        t.set(5, with(t.get(5), 6, "", "", "0.3.0", 1, "tcp"));
        assertThat(Agreement.disagreements(t)).hasValue("ranks 1 (node1) and 4 (node4) run jdist 0.2.0, rank 5 (node5) runs jdist "
                + "0.3.0, the others 0.1.0 (run the same jdist release on every rank)");
    }

    @Test
    void tokensAreNamedByDigestOrAbsence() {
        List<RankRecord> t = all(3, r -> with(r, 3, "aaaa", "", "0.1.0", 1, "tcp"));
        t.set(2, with(t.get(2), 3, "", "", "0.1.0", 1, "tcp"));
        assertThat(Agreement.disagreements(t)).hasValueSatisfying(m -> assertThat(m)
                .startsWith("rank 2 (node2) was started without JDIST_JOB_TOKEN, the others with one"));
        t.set(2, with(t.get(2), 3, "bbbb", "", "0.1.0", 1, "tcp"));
        assertThat(Agreement.disagreements(t)).hasValueSatisfying(m -> assertThat(m)
                .startsWith("rank 2 (node2) was started with a different JDIST_JOB_TOKEN (digest bbbb), the others with digest aaaa"));
    }

    @Test
    void hostfilesWireAndSettings() {
        List<RankRecord> t = all(3, r -> with(r, 3, "", "a123456789abcdef", "0.1.0", 1, "tcp"));
        t.set(1, with(t.get(1), 3, "", "b123456789abcdef", "0.1.0", 2, "shm"));
        String m = Agreement.disagreements(t).orElseThrow();
        assertThat(m).contains("rank 1 (node1) was started with hostfile /hb.json (sha256 b123456789ab), the others with hostfile "
                + "/ha.json (sha256 a123456789ab)");
        assertThat(m).contains("rank 1 (node1) speaks jdist wire protocol 2, the others 1");
        assertThat(m).contains("rank 1 (node1) was started with JDIST_TRANSPORT=shm, the others with tcp");
    }

    @Test
    void aTieGoesToTheGroupOfTheLowestRank() {
        List<RankRecord> t = table(4, -1, r -> r);
        t.set(2, with(t.get(2), 4, "", "", "0.9.0", 1, "tcp"));
        t.set(3, with(t.get(3), 4, "", "", "0.9.0", 1, "tcp"));
        assertThat(Agreement.disagreements(t)).hasValueSatisfying(m -> assertThat(m)
                .startsWith("ranks 2 (node2) and 3 (node3) run jdist 0.9.0, the others 0.1.0"));
    }

    @Test
    void aRecordInTheWrongPlaceOfAnExchange() {
        List<RankRecord> t = table(3, -1, r -> r);
        t.set(2, rec(1, 3));
        assertThat(Agreement.judgeTable(t, "the all-gather")).hasValueSatisfying(m -> assertThat(m)
                .startsWith("the all-gather put node1 (pid 101, 10.0.0.2), which says it is rank 1, in place 2"));
    }

    @Test
    void missingDuplicateAndBeyondRanksFromTheStore() {
        List<RankRecord> byRank = new ArrayList<>(table(4, -1, r -> r));
        byRank.set(3, null);
        RankRecord dup = new RankRecord(1, "RANK", 4, "WORLD_SIZE", "torchrun", "ring", "0.1.0", 1, "", "", "",
                Map.of("JDIST_TRANSPORT", "tcp"), "10.0.0.9", "node9", 999, "boot9", List.of(1), List.of());
        RankRecord beyond = new RankRecord(4, "RANK", 4, "WORLD_SIZE", "torchrun", "ring", "0.1.0", 1, "", "", "",
                Map.of("JDIST_TRANSPORT", "tcp"), "10.0.0.8", "node8", 888, "boot8", List.of(1), List.of());
        String m = Agreement.judge(new Agreement.Joins(4, byRank, List.of(dup), List.of(beyond), true, Duration.ofSeconds(120),
                q -> null, List.of("a connection from 10.9.9.9 did not start with the jdist rendezvous handshake"))).orElseThrow();
        assertThat(m).contains("two processes claim rank 1: node1 (pid 101, 10.0.0.2) and node9 (pid 999, 10.0.0.9)");
        assertThat(m).contains("expected 4 ranks; 3 joined within 120 s; missing rank 3 (rank 3: never connected); the store also "
                + "refused a connection from 10.9.9.9 did not start with the jdist rendezvous handshake");
        assertThat(m).contains("rank 4 (node8) joined, started with RANK=4, but WORLD_SIZE=4 allows ranks 0..3");
    }

    @Test
    void loopbackRanksOnRankZerosHostAreReachedAtTheAddressTheOthersUsed() {
        List<RankRecord> t = new ArrayList<>();
        t.add(rec(0, 3).withHost("127.0.1.1"));
        RankRecord sameHost = new RankRecord(1, "RANK", 3, "WORLD_SIZE", "torchrun", "ring", "0.1.0", 1, "", "", "",
                Map.of(), "127.0.0.1", "node0", 200, "boot0", List.of(1), List.of());
        t.add(sameHost);
        t.add(rec(2, 3));
        Agreement.Result r = Agreement.reachable(t, "10.0.0.1");
        assertThat(r.error()).isNull();
        assertThat(r.table()).extracting(RankRecord::host).containsExactly("10.0.0.1", "10.0.0.1", "10.0.0.3");
        RankRecord elsewhere = new RankRecord(1, "RANK", 3, "WORLD_SIZE", "torchrun", "ring", "0.1.0", 1, "", "", "",
                Map.of(), "127.0.0.1", "nodeX", 200, "bootX", List.of(1), List.of());
        t.set(1, elsewhere);
        assertThat(Agreement.reachable(t, "10.0.0.1").error()).contains("rank 1 (nodeX) can be reached only through loopback")
                .contains("JDIST_IFNAME");
        List<RankRecord> oneHost = List.of(rec(0, 2).withHost("127.0.0.1"), rec(1, 2).withHost("127.0.0.1"));
        assertThat(Agreement.reachable(oneHost, null).table()).isEqualTo(oneHost);
    }
}
