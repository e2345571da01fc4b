package dev.jdist.ring;

import dev.jdist.ConfigException;
import dev.jdist.cluster.RingHostfile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** MLX_RANK / MLX_HOSTFILE / JDIST_TIMEOUT validation (docs/reference/collectives.md §3.1): ConfigException naming file and item, before any socket. */
@Timeout(30)
class RingConfigTest {

    @TempDir
    Path dir;

    private Path file(String json) throws Exception {
        Path f = Files.createTempFile(dir, "hosts-", ".json");
        Files.writeString(f, json);
        return f;
    }

    private static Map<String, String> env(String rank, Path hostfile) {
        Map<String, String> env = new HashMap<>();
        if (rank != null) env.put("MLX_RANK", rank);
        if (hostfile != null) env.put("MLX_HOSTFILE", hostfile.toString());
        return env;
    }

    @Test
    void notConfiguredIsEmptyUnlessStrict() {
        assertThat(new RingBackend().init(false, Map.of())).isEmpty();
        assertThat(new RingBackend().init(false, Map.of("MLX_RANK", "0"))).isEmpty();
        assertThatThrownBy(() -> new RingBackend().init(true, Map.of("MLX_RANK", "3")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MLX_RANK").hasMessageContaining("MLX_HOSTFILE")
                .hasMessageContaining("\"3\"").hasMessageContaining("<unset>");
        assertThat(new RingBackend().isAvailable()).isTrue();
        assertThat(new RingBackend().name()).isEqualTo("ring");
    }

    @Test
    void missingFile() {
        Path missing = dir.resolve("nope.json");
        assertThatThrownBy(() -> new RingBackend().init(false, env("0", missing)))
                .isInstanceOf(ConfigException.class).hasMessageContaining(missing.toString()).hasMessageContaining("does not exist");
    }

    @Test
    void notJsonNamesThePosition() throws Exception {
        Path f = file("[[\"127.0.0.1:1000\"],\n [\"127.0.0.1:1001\"");
        assertThatThrownBy(() -> new RingBackend().init(false, env("0", f)))
                .isInstanceOf(ConfigException.class).hasMessageContaining(f.toString()).hasMessageContaining("line 2");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "[]", "{}", "[1, 2]", "[[\"127.0.0.1:1000\"], [3]]", "[[\"127.0.0.1:1000\"], []]",
            "[[\"127.0.0.1\"]]", "[[\"127.0.0.1:http\"]]", "[[\"127.0.0.1:70000\"]]", "[[\"::1:5000\"]]",
            "[[\"[::1]:5000\"]]", "[[\"no-such-host.invalid:5000\"]]",
            "[[\"127.0.0.1:1000\", \"127.0.0.1:1001\"], [\"127.0.0.1:1002\"]]"})
    void badHostfilesAreConfigErrors(String json) throws Exception {
        Path f = file(json);
        assertThatThrownBy(() -> new RingBackend().init(false, env("0", f)))
                .isInstanceOf(ConfigException.class).hasMessageContaining(f.toString());
    }

    @Test
    void messagesNameTheItem() throws Exception {
        Path f = file("[[\"127.0.0.1:1000\"], [\"127.0.0.1\"]]");
        assertThatThrownBy(() -> new RingBackend().init(false, env("0", f)))
                .hasMessageContaining("rank 1").hasMessageContaining("\"127.0.0.1\"").hasMessageContaining("':'");
        Path g = file("[[\"127.0.0.1:1000\", \"127.0.0.1:1001\"], [\"127.0.0.1:1002\"], [\"127.0.0.1:1003\"]]");
        assertThatThrownBy(() -> new RingBackend().init(false, env("1", g)))
                .hasMessageContaining("ranks 0 and 1").hasMessageContaining("2 and 1");
        Path h = file("[[\"127.0.0.1:1000\"], [\"127.0.0.1:1001\", \"127.0.0.1:1004\"], [\"127.0.0.1:1003\"]]");
        assertThatThrownBy(() -> new RingBackend().init(false, env("0", h))).hasMessageContaining("ranks 0 and 1");
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "x", "1x", " 1", "1.0", "", "99999999999", "2"})
    void badRanks(String rank) throws Exception {
        Path f = file("[[\"127.0.0.1:1000\"], [\"127.0.0.1:1001\"]]");
        assertThatThrownBy(() -> new RingBackend().init(false, env(rank, f)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("MLX_RANK");
    }

    @Test
    void rankTooLargeNamesRankAndSize() throws Exception {
        Path f = file("[[\"127.0.0.1:1000\"], [\"127.0.0.1:1001\"]]");
        assertThatThrownBy(() -> new RingBackend().init(false, env("5", f))).hasMessageContaining("5").hasMessageContaining("2-rank");
    }

    @Test
    void namesAndBareStringsAreAccepted() throws Exception {
        RingHostfile hf = RingHostfile.parse(Path.of("x.json"), "[\"localhost:1000\", [\"127.0.0.2:1001\"]]");
        assertThat(hf.size()).isEqualTo(2);
        assertThat(hf.addresses(0).getFirst().socketAddress().getAddress().getHostAddress()).isEqualTo("127.0.0.1");
        assertThat(hf.addresses(1).getFirst().port()).isEqualTo(1001);
    }

    @Test
    void timeoutParsing() {
        assertThat(RingSettings.parseTimeout(null)).isEqualTo(Duration.ofSeconds(RingSettings.DEFAULT_TIMEOUT_SECONDS));
        assertThat(RingSettings.parseTimeout("2.5")).isEqualTo(Duration.ofMillis(2500));
        for (String bad : new String[] {"0", "-3", "abc", "NaN", "Infinity"}) {
            assertThatThrownBy(() -> RingSettings.parseTimeout(bad)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("JDIST_TIMEOUT");
        }
    }

    /** Without a job token MLX peers may be among the ranks: set-up is as short as MLX's connect retries (30 s). */
    @Test
    void theSetUpDeadlineIsShortWithoutAJobTokenAndJdistTimeoutOverridesIt() throws Exception {
        Path f = file("[[\"127.0.0.1:1000\"], [\"127.0.0.1:1001\"]]");
        assertThat(RingSettings.fromEnvironment(true, env("0", f)).orElseThrow().timeout()).isEqualTo(Duration.ofSeconds(30));
        Map<String, String> tokened = new HashMap<>(env("0", f));
        tokened.put("JDIST_JOB_TOKEN", "t");
        assertThat(RingSettings.fromEnvironment(true, tokened).orElseThrow().timeout()).isEqualTo(Duration.ofSeconds(120));
        Map<String, String> set = new HashMap<>(env("0", f));
        set.put("JDIST_TIMEOUT", "7");
        assertThat(RingSettings.fromEnvironment(true, set).orElseThrow().timeout()).isEqualTo(Duration.ofSeconds(7));
    }

    /** A ring from Distributed.newGroup (no probe, no MLX-peer deadline) keeps one deadline for set-up and progress: 120 s. */
    @Test
    void newGroupRingsWithoutATokenKeepTheirDeadline() throws Exception {
        Path f = RingTestSupport.hostfile(dir, 2, 1);
        var pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            var g0 = pool.submit(() -> dev.jdist.Distributed.newGroup("ring", env("0", f)));
            var g1 = pool.submit(() -> dev.jdist.Distributed.newGroup("ring", env("1", f)));
            try (dev.jdist.Group a = g0.get(60, java.util.concurrent.TimeUnit.SECONDS);
                 dev.jdist.Group b = g1.get(60, java.util.concurrent.TimeUnit.SECONDS)) {
                for (dev.jdist.Group g : List.of(a, b)) {
                    assertThat(((RingGroup) dev.jdist.TestGroups.impl(g)).progressDeadline()).isEqualTo(Duration.ofSeconds(120));
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void spinParsing() {
        assertThat(RingSettings.parseSpin(null)).isEqualTo(RingSettings.DEFAULT_SPIN_MICROS);
        assertThat(RingSettings.parseSpin("0")).isZero();
        assertThat(RingSettings.parseSpin("75")).isEqualTo(75);
        assertThatThrownBy(() -> RingSettings.parseSpin("-1")).isInstanceOf(ConfigException.class).hasMessageContaining("JDIST_RING_SPIN_US");
        assertThatThrownBy(() -> RingSettings.parseSpin("fast")).isInstanceOf(ConfigException.class).hasMessageContaining("fast");
    }

    @Test
    void settingsFromCodeHaveTheEnvironmentDefaults() throws Exception {
        RingHostfile hf = RingHostfile.parse(Path.of("x.json"), "[[\"127.0.0.1:1000\"], [\"127.0.0.1:1001\"]]");
        RingSettings fromEnv = RingSettings.fromEnvironment(true, env("1", file("[[\"127.0.0.1:1000\"], [\"127.0.0.1:1001\"]]")))
                .orElseThrow();
        RingSettings fromCode = RingSettings.of(1, hf);
        assertThat(fromCode.withTuning(fromEnv.tuning())).usingRecursiveComparison().ignoringFields("hostfile")
                .isEqualTo(fromEnv);
        assertThat(fromCode.tuning()).isEqualTo(RingSettings.Tuning.DEFAULT);
        assertThat(fromCode.leftRank()).isZero();
        assertThat(fromCode.rightRank()).isZero();
        assertThat(fromCode.connectionsPerNeighbour()).isEqualTo(1);
        assertThatThrownBy(() -> RingSettings.of(2, hf)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rank 2").hasMessageContaining("2-rank").hasMessageContaining("x.json");
    }

    @Test
    void aSubRingKeepsEverythingButRankAndHostfile() {
        RingHostfile three = RingHostfile.parse(Path.of("x.json"), "[\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:3\"]");
        RingHostfile two = new RingHostfile(null, List.of(three.addresses(0), three.addresses(2)));
        RingSettings.Tuning tuning = RingSettings.Tuning.DEFAULT.withSumScatterWorkBytes(1000).withSocketWindowBytes(999);
        RingSettings parent = new RingSettings(2, three, true, Duration.ofSeconds(7), "tok", 0,
                RingSettings.Transport.SHM, 4096, tuning);
        RingSettings sub = parent.forRing(1, two);
        assertThat(sub).isEqualTo(new RingSettings(1, two, true, Duration.ofSeconds(7), "tok", 0,
                RingSettings.Transport.SHM, 4096, tuning));
        assertThat(sub.leftRank()).isZero();
        assertThat(two.source()).isEqualTo("the in-memory hostfile");
        assertThat(three.source()).isEqualTo("x.json");
    }

    @Test
    void neighboursListTheSameNumberOfAddressesInAFileOrInMemory() throws Exception {
        Path f = file("[[\"127.0.0.1:1000\", \"127.0.0.1:1001\"], [\"127.0.0.1:1002\"]]");
        assertThatThrownBy(() -> RingHostfile.read(f)).isInstanceOf(ConfigException.class)
                .hasMessage("ring hostfile " + f + ": neighbouring ranks 0 and 1 list 2 and 1 addresses; every rank must "
                        + "list the same number of addresses (one per connection to its neighbour)");
        RingHostfile hf = RingHostfile.parse(Path.of("x.json"),
                "[[\"127.0.0.1:1\", \"127.0.0.1:2\"], [\"127.0.0.1:3\", \"127.0.0.1:4\"]]");
        assertThatThrownBy(() -> new RingHostfile(null, List.of(hf.addresses(0), hf.addresses(1).subList(0, 1))))
                .isInstanceOf(ConfigException.class).hasMessageStartingWith("the in-memory ring hostfile: neighbouring ranks 0 and 1");
        assertThatThrownBy(() -> new RingHostfile(null, List.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("lists no ranks");
        assertThatThrownBy(() -> new RingHostfile(null, List.of(List.of()))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("rank 0) lists no addresses");
    }

    @Test
    void tuningIsCheckedWhenBuilt() {
        assertThat(RingSettings.Tuning.DEFAULT.socketWindowBytes()).isEqualTo(1L << 30);
        assertThat(RingSettings.Tuning.DEFAULT.sumScatterWorkBytes()).isEqualTo(16L << 20);
        assertThatThrownBy(() -> RingSettings.Tuning.DEFAULT.withSocketWindowBytes((1L << 30) + 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("socketWindowBytes");
        assertThatThrownBy(() -> RingSettings.Tuning.DEFAULT.withSumScatterWorkBytes(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sumScatterWorkBytes 0");
    }

    @Test
    void oneRankHostfileIsAOneRankGroupWithoutSockets() throws Exception {
        Path f = file("[[\"127.0.0.1:1\"]]");   // one rank: no listener, no connection
        var g = new RingBackend().init(true, env("0", f)).orElseThrow();
        assertThat(g.size()).isEqualTo(1);
        assertThat(g.rank()).isZero();
        g.close();
    }
}
