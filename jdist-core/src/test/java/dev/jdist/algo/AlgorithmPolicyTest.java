package dev.jdist.algo;

import dev.jdist.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.jdist.algo.Algorithm.BRUCK;
import static dev.jdist.algo.Algorithm.RD;
import static dev.jdist.algo.Algorithm.RH;
import static dev.jdist.algo.Algorithm.RHD;
import static dev.jdist.algo.Algorithm.RING;
import static dev.jdist.algo.CollectiveKind.ALL_GATHER;
import static dev.jdist.algo.CollectiveKind.ALL_REDUCE;
import static dev.jdist.algo.CollectiveKind.SUM_SCATTER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** JDIST_ALGO, rules files and the choice (docs/reference/collectives.md §10.9): pure, no sockets. */
class AlgorithmPolicyTest {

    @TempDir
    Path dir;

    private static final Topology EIGHT_HOSTS = new Topology(8, 8, false);
    private static final AlgorithmRules NONE = new AlgorithmRules("none", "", List.of());

    @Test
    void oneNameForcesEveryCollectiveThatHasIt() {
        assertThat(AlgorithmPolicy.parseForced("rd")).isEqualTo(Map.of(ALL_REDUCE, RD, ALL_GATHER, RD));
        assertThat(AlgorithmPolicy.parseForced(" RHD ")).isEqualTo(Map.of(ALL_REDUCE, RHD));
        assertThat(AlgorithmPolicy.parseForced("ring")).isEqualTo(Map.of(ALL_REDUCE, RING, ALL_GATHER, RING, SUM_SCATTER, RING));
        assertThat(AlgorithmPolicy.parseForced("RING1")).isEqualTo(Map.of(ALL_REDUCE, Algorithm.RING1, ALL_GATHER, Algorithm.RING1,
                SUM_SCATTER, Algorithm.RING1));
        assertThat(AlgorithmPolicy.parseForced("all_reduce=rhd, all_gather=bruck,sum_scatter=rh"))
                .isEqualTo(Map.of(ALL_REDUCE, RHD, ALL_GATHER, BRUCK, SUM_SCATTER, RH));
        assertThat(AlgorithmPolicy.parseForced("auto")).isEmpty();
        assertThat(AlgorithmPolicy.parseForced("")).isEmpty();
        assertThat(AlgorithmPolicy.parseForced(null)).isEmpty();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "fast|\"fast\" is not an algorithm",
            "all_reduce=rh|\"rh\" is not an all_reduce algorithm (ring, ring1, rd, rhd, hier, hier-leader)",
            "all_gather=rhd|\"rhd\" is not an all_gather algorithm (ring, ring1, rd, bruck, hier, hier-leader)",
            "reduce=rd|\"reduce\" is not an operation",
            "all_sum=rd|all_reduce covers all_sum, all_max and all_min",
            "all_reduce=rd,all_reduce=rhd|all_reduce is named twice",
            "all_reduce=|\"all_reduce=\" is not op=algorithm",
            "rd,rhd|\"rd\" is not op=algorithm"})
    void badValuesNameTheVariableAndWhatIsAllowed(String value, String why) {
        assertThatThrownBy(() -> AlgorithmPolicy.parseForced(value)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_ALGO=\"" + value + "\"").hasMessageContaining(why)
                .hasMessageContaining("all_reduce=rhd,all_gather=bruck");
    }

    @Test
    void forcedBeatsRulesAndRulesBeatDefaults() {
        AlgorithmRules defaults = AlgorithmRules.parse("d", """
                {"format": "jdist-algo-rules/1", "rules": [
                  {"op": "all_reduce", "algorithm": "rd", "maxBytes": 100},
                  {"op": "all_gather", "algorithm": "bruck", "minRanks": 3, "maxRanks": 8}]}""");
        AlgorithmRules user = AlgorithmRules.parse("u", """
                {"format": "jdist-algo-rules/1", "rules": [
                  {"op": "all_reduce", "algorithm": "rhd", "minBytes": 50, "maxBytes": 1000, "hosts": "several"}]}""");
        AlgorithmPolicy p = AlgorithmPolicy.of(Map.of(), user, defaults);
        assertThat(p.choose(ALL_REDUCE, 10, EIGHT_HOSTS)).isEqualTo(RD);          // user rule: not from 50 bytes
        assertThat(p.choose(ALL_REDUCE, 50, EIGHT_HOSTS)).isEqualTo(RHD);         // user rule first
        assertThat(p.choose(ALL_REDUCE, 50, new Topology(8, 1, false))).isEqualTo(RD);   // user rule is for several hosts
        assertThat(p.choose(ALL_REDUCE, 1001, EIGHT_HOSTS)).isEqualTo(RING);      // nothing matches: the ring
        assertThat(p.choose(ALL_GATHER, 5, new Topology(2, 2, false))).isEqualTo(RING);   // below minRanks
        assertThat(p.choose(ALL_GATHER, 5, new Topology(9, 9, false))).isEqualTo(RING);   // above maxRanks
        assertThat(p.choose(ALL_GATHER, 5, EIGHT_HOSTS)).isEqualTo(BRUCK);
        assertThat(p.forcing(ALL_REDUCE, RD).choose(ALL_REDUCE, 1 << 30, EIGHT_HOSTS)).isEqualTo(RD);
        // on a ring over shared memory the mesh (TCP) is chosen only when forced
        assertThat(p.choose(ALL_REDUCE, 10, new Topology(8, 1, true))).isEqualTo(RING);
        assertThat(p.forcing(ALL_REDUCE, RD).choose(ALL_REDUCE, 10, new Topology(8, 1, true))).isEqualTo(RD);
        assertThat(p.choose(SUM_SCATTER, 10, EIGHT_HOSTS)).isEqualTo(RING);
    }

    @Test
    void theDefaultsLoadAndNameTheirSource() {
        AlgorithmRules d = AlgorithmRules.defaults();
        assertThat(d.rules()).isNotEmpty();
        assertThat(d.source()).contains("built-in");
        // two ranks: one exchange for small messages (the ring's all-reduce takes two), the ring for large ones
        Topology two = new Topology(2, 2, false);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 4, two)).isEqualTo(RD);
        assertThat(AlgorithmPolicy.defaults().choose(CollectiveKind.ALL_GATHER, 4, two)).isEqualTo(RD);
        assertThat(AlgorithmPolicy.defaults().choose(SUM_SCATTER, 4, two)).isEqualTo(Algorithm.RH);
        // large messages: MLX's two-direction ring on one host; across hosts one direction (one flow per link direction)
        Topology twoOnOneHost = new Topology(2, 1, false);
        // two ranks on one host: one direction up to 16 MiB (all_gather 8 MiB, sum_scatter every size), two above
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 16385, twoOnOneHost)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 16L << 20, twoOnOneHost)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, (16L << 20) + 1, twoOnOneHost)).isEqualTo(RING);
        assertThat(AlgorithmPolicy.defaults().choose(CollectiveKind.ALL_GATHER, 8L << 20, twoOnOneHost)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(CollectiveKind.ALL_GATHER, (8L << 20) + 1, twoOnOneHost)).isEqualTo(RING);
        assertThat(AlgorithmPolicy.defaults().choose(SUM_SCATTER, 4097, twoOnOneHost)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(SUM_SCATTER, 1L << 30, twoOnOneHost)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 1L << 30, new Topology(2, 1, true)))
                .isEqualTo(RING);
        for (CollectiveKind k : CollectiveKind.values()) {
            assertThat(AlgorithmPolicy.defaults().choose(k, 1L << 30, two)).isEqualTo(Algorithm.RING1);
            assertThat(AlgorithmPolicy.defaults().choose(k, 1 << 20, new Topology(8, 1, false))).isEqualTo(RING);
            assertThat(AlgorithmPolicy.defaults().choose(k, 1 << 20, two)).isEqualTo(Algorithm.RING1);
            assertThat(AlgorithmPolicy.defaults().choose(k, 1L << 30, EIGHT_HOSTS)).isEqualTo(Algorithm.RING1);
        }
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 4, EIGHT_HOSTS)).isEqualTo(RD);
        // between hosts (3+ ranks) the limits the cluster's --tune measured with link delay: all_reduce as on one host
        // (rd to 16 KiB, rhd to 128 KiB), then ring1; sum_scatter rh to 64 KiB (one host: 16 KiB), then ring1
        Topology eightOnOneHost = new Topology(8, 1, false);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 16384, EIGHT_HOSTS)).isEqualTo(RD);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 16385, EIGHT_HOSTS)).isEqualTo(RHD);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 16385, eightOnOneHost)).isEqualTo(RHD);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 131072, EIGHT_HOSTS)).isEqualTo(RHD);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 131073, EIGHT_HOSTS)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(ALL_REDUCE, 131073, eightOnOneHost)).isEqualTo(RING);
        assertThat(AlgorithmPolicy.defaults().choose(SUM_SCATTER, 65536, EIGHT_HOSTS)).isEqualTo(Algorithm.RH);
        assertThat(AlgorithmPolicy.defaults().choose(SUM_SCATTER, 65537, EIGHT_HOSTS)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.defaults().choose(SUM_SCATTER, 16385, eightOnOneHost)).isEqualTo(RING);
        assertThat(AlgorithmPolicy.defaults().choose(CollectiveKind.ALL_GATHER, 65536, EIGHT_HOSTS)).isEqualTo(RD);
        assertThat(AlgorithmPolicy.defaults().choose(CollectiveKind.ALL_GATHER, 65537, EIGHT_HOSTS)).isEqualTo(Algorithm.RING1);
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "ring")).choose(ALL_REDUCE, 1L << 30, EIGHT_HOSTS))
                .isEqualTo(RING);
    }

    @Test
    void severalHostsWithSeveralRanksOnSomeChooseTheHierarchy() throws Exception {
        AlgorithmPolicy d = AlgorithmPolicy.defaults();
        Topology shared = new Topology(8, 2, false);                       // 2 hosts of 4
        Topology uneven = new Topology(5, 4, false);                       // one host with 2, three with 1
        for (CollectiveKind k : CollectiveKind.values()) {
            for (long bytes : new long[] {4, 1 << 20, 1L << 30}) {
                assertThat(d.choose(k, bytes, shared)).as("%s %d", k, bytes).isEqualTo(Algorithm.HIER);
                assertThat(d.choose(k, bytes, uneven)).isEqualTo(Algorithm.HIER);
            }
            assertThat(d.choose(k, 4, new Topology(8, 1, false))).isNotIn(Algorithm.HIER, Algorithm.HIER_LEADER);   // one host
            assertThat(d.choose(k, 4, EIGHT_HOSTS)).isNotIn(Algorithm.HIER, Algorithm.HIER_LEADER);             // 1 per host
            assertThat(d.choose(k, 4, new Topology(8, 2, true))).isEqualTo(RING);                                // shm ring
        }
        // JDIST_ALGO forces either variant, or another algorithm over the hierarchy
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "hier-leader")).choose(ALL_GATHER, 4, shared))
                .isEqualTo(Algorithm.HIER_LEADER);
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "all_reduce=rd")).choose(ALL_REDUCE, 4, shared)).isEqualTo(RD);
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "hier")).choose(SUM_SCATTER, 4, EIGHT_HOSTS))
                .isEqualTo(Algorithm.HIER);
        // a user's rule comes before the hierarchy
        Path f = dir.resolve("hier-rules.json");
        Files.writeString(f, "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rhd\"}]}");
        AlgorithmPolicy user = AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO_RULES", f.toString()));
        assertThat(user.choose(ALL_REDUCE, 4, shared)).isEqualTo(RHD);
        assertThat(user.choose(ALL_GATHER, 4, shared)).isEqualTo(Algorithm.HIER);
    }

    @Test
    void rulesFilesRoundTripAndAreReadFromTheVariable() throws Exception {
        AlgorithmRules r = new AlgorithmRules("x", "measured here", List.of(
                new AlgorithmRules.Rule(ALL_REDUCE, RD, 4, 4, 0, 4096, AlgorithmRules.Hosts.SEVERAL),
                new AlgorithmRules.Rule(SUM_SCATTER, RH, 2, Integer.MAX_VALUE, 17, Long.MAX_VALUE, AlgorithmRules.Hosts.ANY)));
        Path f = dir.resolve("rules.json");
        Files.writeString(f, r.toJson());
        AlgorithmPolicy p = AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO_RULES", f.toString()));
        assertThat(p.choose(ALL_REDUCE, 4096, new Topology(4, 4, false))).isEqualTo(RD);
        AlgorithmRules back = AlgorithmRules.read(f);
        assertThat(back.rules()).isEqualTo(r.rules());
        assertThat(back.comment()).isEqualTo("measured here");
        assertThat(p.describe()).contains("rules from JDIST_ALGO_RULES file " + f);
    }

    @Test
    void theDigestChangesWithWhatIsForcedOrTheRules() throws Exception {
        byte[] plain = AlgorithmPolicy.fromEnvironment(Map.of()).digest();
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "auto")).digest()).isEqualTo(plain);
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "rd")).digest()).isNotEqualTo(plain).hasSize(8);
        // one rank forcing MLX's two-direction ring and another the one-direction ring must not meet: their bytes differ
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "ring1")).digest())
                .isNotEqualTo(plain).isNotEqualTo(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO", "ring")).digest());
        Path f = dir.resolve("r.json");
        Files.writeString(f, "{\"format\": \"jdist-algo-rules/1\", \"rules\": []}");
        assertThat(AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO_RULES", f.toString())).digest()).isNotEqualTo(plain);
        // builds whose default rules differ must not meet either; a different comment alone changes no choice
        AlgorithmRules d = AlgorithmRules.defaults();
        assertThat(AlgorithmPolicy.of(Map.of(), null, d).digest()).isEqualTo(plain);
        assertThat(AlgorithmPolicy.of(Map.of(), null, new AlgorithmRules("other build", "another comment", d.rules())).digest())
                .isEqualTo(plain);
        assertThat(AlgorithmPolicy.of(Map.of(), null, new AlgorithmRules("older build", "", d.rules().subList(1, d.rules().size())))
                .digest()).isNotEqualTo(plain);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{|is not valid JSON at line 1",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": []} ]|is not valid JSON",
            "[]|expected a JSON object",
            "{\"rules\": []}|\"format\" must be \"jdist-algo-rules/1\", got nothing",
            "{\"format\": \"jdist-algo-rules/9\", \"rules\": []}|got \"jdist-algo-rules/9\"",
            "{\"format\": \"jdist-algo-rules/1\"}|\"rules\" must be an array",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [], \"extra\": 1}|the top level has an unknown field \"extra\"",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [3]}|rule 0 must be an object",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"bcast\", \"algorithm\": \"rd\"}]}|rule 0: \"op\" must be one of",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"bruck\"}]}|\"algorithm\" must be one of ring, ring1, rd, rhd, hier, hier-leader for all_reduce, got \"bruck\"",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"maxBytes\": -1}]}|\"maxBytes\" must be a whole number from 0",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"maxBytes\": 1.5}]}|\"maxBytes\" must be a whole number",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"minRanks\": 1}]}|\"minRanks\" must be a whole number from 2",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"minRanks\": 8, \"maxRanks\": 4}]}|\"maxRanks\" 4 is below \"minRanks\" 8",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"hosts\": \"two\"}]}|\"hosts\" must be",
            "{\"format\": \"jdist-algo-rules/1\", \"rules\": [{\"op\": \"all_reduce\", \"algorithm\": \"rd\", \"maxbytes\": 3}]}|rule 0 has an unknown field \"maxbytes\""})
    void badRulesFilesNameTheFileTheRuleAndTheField(String text, String why) {
        assertThatThrownBy(() -> AlgorithmRules.parse("JDIST_ALGO_RULES file /x.json", text)).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("JDIST_ALGO_RULES file /x.json").hasMessageContaining(why);
    }

    @Test
    void deeplyNestedOrMissingFilesAreConfigurationErrors() {
        assertThatThrownBy(() -> AlgorithmRules.parse("f", "[".repeat(100_000))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("not valid JSON");
        assertThatThrownBy(() -> AlgorithmPolicy.fromEnvironment(Map.of("JDIST_ALGO_RULES", dir.resolve("nope.json").toString())))
                .isInstanceOf(ConfigException.class).hasMessageContaining("does not exist").hasMessageContaining("jdist bench --tune");
    }
}
