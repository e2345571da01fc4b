package dev.jdist.config;

import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import dev.jdist.hosts.HostEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

@Timeout(30)
class ClusterConfiguratorTest {

    /** One run of the tool against recorded hosts. */
    static final class Run {
        final RecordedMacShell shell;
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit;

        Run(String scenario, String... unreachable) {
            shell = new RecordedMacShell(scenario, unreachable);
        }

        Run exec(ConfigOptions options, String stdin) {
            var log = new ConsoleLog(new PrintStream(err, true, StandardCharsets.UTF_8), true, false);
            try {
                exit = new ClusterConfigurator(options, shell, log, new PrintStream(out, true, StandardCharsets.UTF_8),
                        new BufferedReader(new StringReader(stdin))).run();
            } catch (CliFailure failure) {
                failure.lines().forEach(log::error); // as jdist config prints it (dev.jdist.cli.FailureHandler)
                exit = failure.exitStatus();
            }
            return this;
        }

        String out() {
            return out.toString(StandardCharsets.UTF_8);
        }

        String err() {
            return err.toString(StandardCharsets.UTF_8);
        }
    }

    static ConfigOptions tb(List<HostEntry> hosts, String backend, boolean auto, Path output) {
        return new ConfigOptions(hosts, "thunderbolt", backend, auto, false, output, List.of(), false, new MacOsPlatform());
    }

    static String hostfileSection(String out) {
        return out.substring(out.indexOf("Hostfile\n========\n") + 18);
    }

    @Test
    void twoMacsWithRdmaGetTheSpecJacclHostfileAndPrintedCommands() {
        Run run = new Run("two").exec(tb(MacFixtures.hosts("mac-a", "mac-b"), null, false, null), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(run.out()).startsWith("""
                Setup for mac-a
                ===============
                sudo ifconfig bridge0 down
                sudo ifconfig en2 inet 192.168.0.1 netmask 255.255.255.252
                sudo route change 192.168.0.2 -interface en2

                Enter to continue
                Setup for mac-b
                ===============
                sudo ifconfig bridge0 down
                sudo ifconfig en3 inet 192.168.0.2 netmask 255.255.255.252
                sudo route change 192.168.0.1 -interface en3

                Enter to continue
                Hostfile
                ========
                {
                    "backend": "jaccl",
                """);
        assertThat(hostfileSection(run.out())).contains("\"10.0.0.11\"", "\"rdma_en2\"", "\"rdma_en3\"").endsWith("}\n");
        assertThat(run.err()).contains("[INFO] Checking for ssh access for mac-a, mac-b ",
                "[INFO] Preparing for communication over thunderbolt ", "[INFO] Getting connectivity from mac-a ",
                "[INFO] Getting interface names from mac-b ", "[INFO] Checking that mac-b supports RDMA ",
                "[INFO] Getting the ip from mac-a ").doesNotContain("WARN");
        // nothing ran on the hosts beyond the checks and the data collection
        assertThat(run.shell.received).noneMatch(c -> c.contains("ifconfig"));
    }

    @Test
    void meshOfThreeAsARing() {
        Run run = new Run("mesh3").exec(tb(MacFixtures.hosts("h0", "h1", "h2"), "ring", false, null), "\n\n\n");
        assertThat(run.exit).as(run.err()).isZero();
        String json = hostfileSection(run.out());
        assertThat(json).contains("\"backend\": \"ring\"");
        assertThat(json.replaceAll("\\s", "")).contains(
                "{\"ssh\":\"h0\",\"ips\":[\"192.168.0.5\"],\"rdma\":[]},{\"ssh\":\"h1\",\"ips\":[\"192.168.0.2\"],\"rdma\":[]},"
                        + "{\"ssh\":\"h2\",\"ips\":[\"192.168.0.10\"],\"rdma\":[]}");
        assertThat(run.shell.received).noneMatch(c -> c.endsWith("ibv_devices") || c.contains("ipconfig"));
        assertThat(run.out()).contains("""
                Setup for h0
                ============
                sudo ifconfig bridge0 down
                sudo ifconfig en2 inet 192.168.0.1 netmask 255.255.255.252
                sudo route change 192.168.0.2 -interface en2
                sudo ifconfig en3 inet 192.168.0.5 netmask 255.255.255.252
                sudo route change 192.168.0.6 -interface en3
                """);
    }

    @Test
    void doubleCableRingAutomaticallyBecomesJacclRing() {
        Run run = new Run("ring4").exec(tb(MacFixtures.hosts("r0", "r1", "r2", "r3"), null, false, null), "");
        assertThat(run.exit).as(run.err()).isZero();
        String json = hostfileSection(run.out()).replaceAll("\\s", "");
        assertThat(json).startsWith("{\"backend\":\"jaccl-ring\"")
                .contains("{\"ssh\":\"r3\",\"ips\":[\"10.0.0.14\"],\"rdma\":[[\"rdma_en4\",\"rdma_en5\"],null,[\"rdma_en2\",\"rdma_en3\"],null]}");
    }

    @Test
    void brokenMeshNamesTheMissingCableByHostAndPort() {
        Run run = new Run("broken-mesh").exec(tb(MacFixtures.hosts("m0", "m1", "m2", "m3"), "jaccl", false, null), "");
        assertThat(run.exit).isEqualTo(1);
        assertThat(run.err()).contains("[ERROR] Incomplete mesh, m1 is not connected to m3 \n[ERROR]  \n"
                + "[ERROR] Try passing --dot to visualize the connectivity \n")
                .contains("m1 <-> m3: connect a free port of m1 (en4 = Thunderbolt 3, en5 = Thunderbolt 4) to a free port of m3 (en3 = Thunderbolt 2, en5 = Thunderbolt 4)");
        assertThat(run.out()).doesNotContain("Hostfile");
    }

    @Test
    void miswiredCableIsReported() {
        Run run = new Run("miswired").exec(tb(MacFixtures.hosts("h0", "h1", "h2"), "ring", false, null), "");
        assertThat(run.exit).isEqualTo(1);
        assertThat(run.err()).contains("[ERROR] Could not find a full ring. ", "[ERROR] Rings found: ",
                "[ERROR]  - h0 \n", "[ERROR]  - h0,h1 \n", "[ERROR]  - h1,h2 \n",
                "Miswired: h0 en3 (Thunderbolt 2) is cabled to h0's own en4",
                "h2 en2 (Thunderbolt 1) is cabled to a Mac that is not in the host list",
                "[WARN] Cable h0 en3 (Thunderbolt 2) <-> h0 en4 (Thunderbolt 3) loops back into the same Mac");
    }

    @Test
    void thunderbolt4MeansRingWithAnExplainedRdmaWarning() {
        Run run = new Run("tb4").exec(tb(MacFixtures.hosts("t0", "t1"), null, false, null), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(hostfileSection(run.out())).contains("\"backend\": \"ring\"");
        assertThat(run.err()).contains("[WARN] t0 does not seem to have RDMA enabled ",
                "t0 has Thunderbolt 4 ports (Up to 40 Gb/s): RDMA over Thunderbolt needs Thunderbolt 5",
                "[WARN] Some of the hosts don't have RDMA enabled or they don't support RDMA. ",
                "rdma_ctl enable", "[INFO] Cable t0 en2 (Thunderbolt 1) <-> t1 en2 (Thunderbolt 1): Thunderbolt 4 (Up to 40 Gb/s)");
    }

    @Test
    void strictJacclOnThunderbolt4Fails() {
        Run run = new Run("tb4").exec(tb(MacFixtures.hosts("t0", "t1"), "jaccl", false, null), "");
        assertThat(run.exit).isEqualTo(1);
        assertThat(run.err()).contains("[ERROR] t1 does not seem to have RDMA enabled ", "[ERROR] Some of the hosts");
    }

    @Test
    void mixedGenerationsWarnAboutTheSlowCable() {
        Run run = new Run("tb-mixed").exec(tb(MacFixtures.hosts("t0", "t1"), null, false, null), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(hostfileSection(run.out())).contains("\"backend\": \"ring\""); // t1 has no RDMA
        assertThat(run.err()).contains("Cable t0 en2 (Thunderbolt 1) <-> t1 en2 (Thunderbolt 1): Thunderbolt 4 (Up to 40 Gb/s)",
                "t1 has Thunderbolt 4 ports").doesNotContain("t0 does not seem");
    }

    @Test
    void autoSetupRunsTheJoinedCommandsOnEveryHost() {
        Run run = new Run("mesh3").exec(tb(MacFixtures.hosts("h0", "h1", "h2"), null, true, null), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(run.out()).startsWith("Running auto setup for h0\n\nRunning auto setup for h1\n\nRunning auto setup for h2\n\nHostfile\n");
        assertThat(run.shell.received).contains("h0: sudo ifconfig bridge0 down ; sudo ifconfig en2 inet 192.168.0.1 netmask"
                + " 255.255.255.252 ; sudo route change 192.168.0.2 -interface en2 ; sudo ifconfig en3 inet 192.168.0.5 netmask"
                + " 255.255.255.252 ; sudo route change 192.168.0.6 -interface en3");
        assertThat(run.err()).contains("[INFO] Running ssh -o BatchMode=yes -o ConnectTimeout=5 h2 sudo ifconfig bridge0 down ; ");
    }

    @Test
    void autoSetupWithoutSudoFallsBackToPrintedCommands() {
        Run run = new Run("tb5").exec(tb(MacFixtures.hosts("t0", "t1"), null, true, null), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(run.err()).contains("[WARN] Automatic setup requested but the following hosts do not have passwordless sudo \n"
                + "\u0000".replace("\u0000", "") + "[WARN]  -  t1 \n");
        assertThat(run.out()).contains("Setup for t0\n============\n");
        assertThat(run.shell.received).noneMatch(c -> c.contains("ifconfig"));
    }

    @Test
    void unreachableHostStopsEverything() {
        Run run = new Run("mesh3", "h1").exec(tb(MacFixtures.hosts("h0", "h1", "h2"), null, false, null), "");
        assertThat(run.exit).isEqualTo(1);
        assertThat(run.err()).contains("[ERROR] Could not ssh to the following hosts: \n[ERROR]   -  h1 \n[ERROR]  \n"
                + "[ERROR] Maybe they are not set-up for password-less ssh? \n",
                "h1: ssh: connect to host h1 port 22: Connection refused");
        assertThat(run.shell.received).noneMatch(c -> c.contains("system_profiler"));
    }

    @Test
    void ignoredUnreachableHostsAreDroppedAndNamed() {
        Run run = new Run("mesh3", "h2").exec(new ConfigOptions(MacFixtures.hosts("h0", "h1", "h2"), "thunderbolt", null,
                false, false, null, List.of(), true, new MacOsPlatform()), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(run.err()).contains("[WARN] Ignoring hosts that ssh cannot reach: h2 (");
        assertThat(hostfileSection(run.out())).contains("\"h0\"", "\"h1\"").doesNotContain("\"h2\"");
        Run none = new Run("mesh3", "h0").exec(new ConfigOptions(MacFixtures.hosts("h0"), "thunderbolt", null,
                false, false, null, List.of(), true, new MacOsPlatform()), "");
        assertThat(none.exit).isEqualTo(1);
        assertThat(none.err()).contains("[ERROR] No host is left");
    }

    @Test
    void dotStopsAfterTheWiring() {
        Run run = new Run("two").exec(new ConfigOptions(MacFixtures.hosts("mac-a", "mac-b"), "thunderbolt", null,
                false, true, null, List.of(), false, new MacOsPlatform()), "");
        assertThat(run.exit).isZero();
        assertThat(run.out()).isEqualTo(DotWriter.write(MacFixtures.topology("two", "mac-a", "mac-b")));
        assertThat(run.shell.received).noneMatch(c -> c.contains("ibv_devices") || c.contains("ipconfig"));
    }

    @Test
    void ethernetHostfileAppendsTheDiscoveredAddresses(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("hosts.json");
        List<HostEntry> hosts = new ArrayList<>(MacFixtures.hosts("h0", "h1"));
        Run run = new Run("mesh3").exec(new ConfigOptions(hosts, "ethernet", "jaccl", false, false, out,
                List.of("MLX_METAL_FAST_SYNCH=1"), false, new MacOsPlatform()), "");
        assertThat(run.exit).as(run.err()).isZero();
        assertThat(run.out()).isEmpty();
        assertThat(run.err()).contains("[WARN] --dot, --backend and --auto-setup only apply to --over thunderbolt");
        assertThat(Files.readString(out)).isEqualTo("""
                {
                    "backend": "",
                    "envs": [
                        "MLX_METAL_FAST_SYNCH=1"
                    ],
                    "hosts": [
                        {
                            "ssh": "h0",
                            "ips": [
                                "10.0.0.11"
                            ],
                            "rdma": []
                        },
                        {
                            "ssh": "h1",
                            "ips": [
                                "10.0.0.12"
                            ],
                            "rdma": []
                        }
                    ]
                }""");
    }

    @Test
    void unwritableOutputIsAnError(@TempDir Path dir) {
        Path out = dir.resolve("no/such/folder/hosts.json");
        Run run = new Run("two").exec(tb(MacFixtures.hosts("mac-a", "mac-b"), "ring", false, out), "");
        assertThat(run.exit).isEqualTo(1);
        assertThat(run.err()).contains("[ERROR] Could not write the hostfile to " + out);
    }
}
