package dev.jdist.bench;

import dev.jdist.testing.LongTest;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code jdist bench} end to end: a real job of several JVMs through {@code jdist launch}, results checked on every rank. */
class BenchIT {
    private static final Duration T = Duration.ofSeconds(240);
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    @Timeout(300)
    void everyOpOfASweepIsCheckedAndReportedAsJson() throws Exception {
        CommandResult r = JdistCli.run(T, Map.of(), "bench", "-n", "3", "-p", String.valueOf(FreePorts.block(3)),
                "--op", "all_sum,all_max,all_min,all_gather,sum_scatter,send_recv", "--sizes", "4B:1MiB", "-f", "64",
                "-w", "1", "-i", "3", "--mode", "all", "--json");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<BenchResult> rows = JSON.readValue(r.stdout(), new TypeReference<>() {});
        // 6 ops x 4 sizes (4 B, 256 B, 16 KiB, 1 MiB) x 3 modes
        assertThat(rows).hasSize(6 * 4 * 3);
        assertThat(rows).extracting(BenchResult::mode).containsOnly("out-of-place", "in-place", "returned");
        assertThat(rows).extracting(BenchResult::op).containsOnly("all_sum", "all_max", "all_min", "all_gather", "sum_scatter",
                "send_recv");
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.wrong()).as("#wrong of %s", row).isZero();
            assertThat(row.ranks()).isEqualTo(3);
            assertThat(row.type()).isEqualTo("float32");
            assertThat(row.medianMicros()).isPositive();
            assertThat(row.p99Micros()).isGreaterThanOrEqualTo(row.medianMicros());
            assertThat(row.busbwGBs()).isGreaterThanOrEqualTo(0);
            assertThat(row.peakRssBytes()).isPositive();
            assertThat(row.peakRssBytesPerRank()).hasSize(3).contains(row.peakRssBytes());
            assertThat(java.util.Arrays.stream(row.peakRssBytesPerRank()).min().orElse(0)).isPositive();
        });
        BenchResult sum1MiB = rows.stream().filter(x -> x.op().equals("all_sum") && x.bytes() == 1 << 20).findFirst().orElseThrow();
        assertThat(sum1MiB.count()).isEqualTo(262_144);
        assertThat(sum1MiB.busbwGBs()).isCloseTo(sum1MiB.algbwGBs() * 2 * 2 / 3, org.assertj.core.data.Offset.offset(1e-9));
    }

    @Test
    @Timeout(300)
    void broadcastAndAllToAllAreCheckedOnEveryRankWithNcclTestsBusFactors() throws Exception {
        CommandResult r = JdistCli.run(T, Map.of(), "bench", "-n", "3", "-p", String.valueOf(FreePorts.block(3)),
                "--op", "broadcast,all_to_all", "--sizes", "4B:64KiB", "-f", "16", "--jit-warmup", "0", "-w", "1", "-i", "3", "--mode", "all", "--json");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<BenchResult> rows = JSON.readValue(r.stdout(), new TypeReference<>() {});
        assertThat(rows).hasSize(2 * 5 * 3);
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.wrong()).as("#wrong of %s", row).isZero();
            double factor = row.op().equals("broadcast") ? 1 : 2.0 / 3;
            assertThat(row.busbwGBs()).isCloseTo(row.algbwGBs() * factor, org.assertj.core.data.Offset.offset(1e-9));
        });
    }

    @Test
    @Timeout(300)
    void tableCsvAndPlot(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("ring.png");
        CommandResult table = JdistCli.run(T, Map.of(), "bench", "-n", "2", "-p", String.valueOf(FreePorts.block(2)),
                "--op", "all_sum", "--sizes", "4B:64KiB", "-f", "16", "-w", "1", "-i", "3", "-d", "bfloat16", "--plot", png.toString());
        assertThat(table.exitCode()).as(table.toString()).isZero();
        assertThat(table.stdout()).contains("# all_sum, 2 ranks, bfloat16")
                .contains("size", "count", "type", "redop", "median(us)", "p99(us)", "algbw", "busbw", "#wrong", "peakRSS");
        List<String> dataRows = table.stdout().lines().filter(l -> !l.startsWith("#") && !l.isBlank()).toList();
        assertThat(dataRows).hasSize(5); // 4 B, 64 B, 1 KiB, 16 KiB, 64 KiB
        // two ranks: one exchange (rd) up to 16 KiB, the ring in one direction above (the algo column; default-rules.json)
        assertThat(dataRows).allSatisfy(l -> assertThat(l.trim().split("\\s+")).hasSize(12).contains("bfloat16", "sum"));
        assertThat(dataRows).extracting(l -> l.trim().split("\\s+")[11]).containsExactly("rd", "rd", "rd", "rd", "ring1");
        byte[] image = Files.readAllBytes(png);
        assertThat(image).startsWith((byte) 0x89, (byte) 'P', (byte) 'N', (byte) 'G');

        Path svg = dir.resolve("ring.svg");
        CommandResult csv = JdistCli.run(T, Map.of(), "bench", "-n", "2", "-p", String.valueOf(FreePorts.block(2)),
                "--op", "all_gather", "--sizes", "8B:8KiB", "-f", "32", "-w", "1", "-i", "2", "--csv", "--plot", svg.toString());
        assertThat(csv.exitCode()).as(csv.toString()).isZero();
        List<String> lines = csv.stdout().lines().toList();
        assertThat(lines.getFirst()).startsWith("op,");
        assertThat(lines).hasSize(1 + 3);
        assertThat(Files.readString(svg)).contains("<svg").contains("</svg>");
    }

    @LongTest   // a timing sweep
    @Test
    @Timeout(600)
    void tuneWritesRulesThatTheNextJobFollows(@TempDir Path dir) throws Exception {
        Path rules = dir.resolve("rules.json");
        CommandResult tune = JdistCli.run(Duration.ofSeconds(540), Map.of(), "bench", "-n", "3", "-p", String.valueOf(FreePorts.block(3)),
                "--tune", rules.toString(), "--sizes", "4B:64KiB", "-f", "16", "--jit-warmup", "0", "-w", "1", "-i", "3", "--json");
        assertThat(tune.exitCode()).as(tune.toString()).isZero();
        List<BenchResult> rows = JSON.readValue(tune.stdout(), new TypeReference<>() {});
        // 5 sizes: all_sum by ring, ring1, rd, rhd; all_gather by ring, ring1, rd, bruck; sum_scatter by ring, ring1, rh
        assertThat(rows).hasSize(5 * (4 + 4 + 3));
        assertThat(rows).allSatisfy(row -> assertThat(row.wrong()).as("#wrong of %s", row).isZero());
        assertThat(rows).extracting(BenchResult::algorithm).containsOnly("ring", "ring1", "rd", "rhd", "bruck", "rh");
        assertThat(rows).extracting(BenchResult::hosts).containsOnly(1);
        assertThat(tune.stderr()).contains("JDIST_ALGO_RULES=" + rules.toAbsolutePath());
        dev.jdist.algo.AlgorithmRules written = dev.jdist.algo.AlgorithmRules.read(rules);
        assertThat(written.comment()).contains("jdist bench --tune").contains("3 ranks on 1 host(s)");
        assertThat(written.rules()).isNotEmpty().allSatisfy(r -> {
            assertThat(r.minRanks()).isEqualTo(3);
            assertThat(r.hosts()).isEqualTo(dev.jdist.algo.AlgorithmRules.Hosts.ONE);
        });

        // a job with JDIST_ALGO_RULES runs, at each size, the algorithm the file says
        CommandResult after = JdistCli.run(T, Map.of("JDIST_ALGO_RULES", rules.toString()), "bench", "-n", "3",
                "-p", String.valueOf(FreePorts.block(3)), "--op", "all_sum,all_gather,sum_scatter", "--sizes", "4B:64KiB", "-f", "16",
                "-w", "1", "-i", "2", "--json");
        assertThat(after.exitCode()).as(after.toString()).isZero();
        List<BenchResult> followed = JSON.readValue(after.stdout(), new TypeReference<>() {});
        dev.jdist.algo.Topology oneHost = new dev.jdist.algo.Topology(3, 1, false);
        assertThat(followed).hasSize(15).allSatisfy(row -> {
            var kind = BenchWorker.kindOf(BenchOp.parse(row.op()));
            assertThat(row.algorithm()).as("%s", row).isEqualTo(written.match(kind, row.bytes(), oneHost).algorithm().text());
            assertThat(row.wrong()).isZero();
        });

        // a second tune for the same rank count replaces its rules; a file that is not a rules file is refused up front
        Files.writeString(dir.resolve("junk.json"), "[1, 2");
        CommandResult junk = JdistCli.run(T, Map.of(), "bench", "-n", "3", "--tune", dir.resolve("junk.json").toString());
        assertThat(junk.exitCode()).isEqualTo(2);
        assertThat(junk.stderr()).contains("--tune").contains("junk.json").contains("not valid JSON");
    }

    @Test
    @Timeout(120)
    void badOptionsAreNamedBeforeAnythingStarts() {
        CommandResult op = JdistCli.run(T, Map.of(), "bench", "--op", "all_foo");
        assertThat(op.exitCode()).isEqualTo(2);
        assertThat(op.stderr()).contains("all_foo");
        CommandResult sizes = JdistCli.run(T, Map.of(), "bench", "--sizes", "64MiB:4B");
        assertThat(sizes.exitCode()).isEqualTo(2);
        assertThat(sizes.stderr()).contains("--sizes");
        CommandResult mode = JdistCli.run(T, Map.of(), "bench", "--mode", "sideways");
        assertThat(mode.exitCode()).isEqualTo(2);
        assertThat(mode.stderr()).contains("--mode", "returned", "sideways");
        CommandResult jit = JdistCli.run(T, Map.of(), "bench", "--jit-warmup", "-1");
        assertThat(jit.exitCode()).isEqualTo(2);
        assertThat(jit.stderr()).contains("--jit-warmup").contains("-1");
        CommandResult dtype = JdistCli.run(T, Map.of(), "bench", "-d", "float8");
        assertThat(dtype.exitCode()).isEqualTo(2);
        assertThat(dtype.stderr()).contains("float8");
    }
}
