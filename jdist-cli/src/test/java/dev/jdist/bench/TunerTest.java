package dev.jdist.bench;

import dev.jdist.algo.Algorithm;
import dev.jdist.algo.AlgorithmRules;
import dev.jdist.algo.AlgorithmRules.Hosts;
import dev.jdist.algo.AlgorithmRules.Rule;
import dev.jdist.algo.CollectiveKind;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** From tune rows to rules: the fastest algorithm per size, runs of sizes, noise smoothed, merging with a file. */
class TunerTest {

    private static BenchResult row(String op, long bytes, String algo, double micros, int hosts) {
        return new BenchResult(op, "out-of-place", bytes, bytes / 4, "float32", "sum", 8, micros, micros, 0, 0, 0, 0,
                new long[0], algo, hosts);
    }

    /** all_sum rows: rd fastest up to 4 KiB, rhd to 256 KiB, the ring above; one noisy row at 64 KiB. */
    private static List<BenchResult> allSumRows(int hosts) {
        List<BenchResult> rows = new ArrayList<>();
        for (long b = 4; b <= (1 << 22); b *= 4) {
            double rd = 100 + b / 100.0;
            double rhd = 180 + b / 400.0;
            double ring = 600 + b / 800.0;
            if (b == 65536) rd = rhd * 0.97;    // noise: rd just ahead at one size inside rhd's range
            rows.add(row("all_sum", b, "rd", rd, hosts));
            rows.add(row("all_sum", b, "rhd", rhd, hosts));
            rows.add(row("all_sum", b, "ring", ring, hosts));
        }
        return rows;
    }

    @Test
    void runsOfSizesBecomeRulesForThisRankCountAndTopology() {
        List<Rule> rules = Tuner.rules(allSumRows(8));
        assertThat(rules).extracting(Rule::algorithm).containsExactly(Algorithm.RD, Algorithm.RHD, Algorithm.RING);
        assertThat(rules).allSatisfy(r -> {
            assertThat(r.op()).isEqualTo(CollectiveKind.ALL_REDUCE);
            assertThat(r.minRanks()).isEqualTo(8);
            assertThat(r.maxRanks()).isEqualTo(8);
            assertThat(r.hosts()).isEqualTo(Hosts.SEVERAL);
        });
        // rd: 100 + b/100 < 180 + b/400 while b < 10667: sizes 4 .. 4096; then rhd through the noisy 64 KiB row
        assertThat(rules.get(0).minBytes()).isZero();
        assertThat(rules.get(0).maxBytes()).isEqualTo(4096);
        assertThat(rules.get(1).minBytes()).isEqualTo(4097);
        assertThat(rules.get(2).maxBytes()).isEqualTo(1 << 22);     // the largest size measured: beyond it, the defaults
        assertThat(Tuner.rules(allSumRows(1))).allSatisfy(r -> assertThat(r.hosts()).isEqualTo(Hosts.ONE));
    }

    @Test
    void mergingReplacesOnlyWhatWasMeasured() {
        AlgorithmRules existing = new AlgorithmRules("old", "", List.of(
                new Rule(CollectiveKind.ALL_REDUCE, Algorithm.RD, 8, 8, 0, 100, Hosts.SEVERAL),      // replaced
                new Rule(CollectiveKind.ALL_REDUCE, Algorithm.RD, 4, 4, 0, 100, Hosts.SEVERAL),      // other rank count: kept
                new Rule(CollectiveKind.ALL_GATHER, Algorithm.BRUCK, 8, 8, 0, 100, Hosts.SEVERAL))); // other op: kept
        List<Rule> fresh = Tuner.rules(allSumRows(8));
        AlgorithmRules merged = Tuner.merge(existing, fresh, "measured");
        assertThat(merged.rules()).hasSize(fresh.size() + 2);
        assertThat(merged.rules().subList(0, fresh.size())).isEqualTo(fresh);
        assertThat(merged.rules()).contains(existing.rules().get(1), existing.rules().get(2)).doesNotContain(existing.rules().getFirst());
        assertThat(AlgorithmRules.parse("x", merged.toJson()).rules()).isEqualTo(merged.rules());
    }
}
