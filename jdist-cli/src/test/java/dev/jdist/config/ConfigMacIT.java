package dev.jdist.config;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jdist config} end to end against fake Macs: real ssh into network namespaces whose stub commands replay
 * recorded macOS outputs (see {@link FakeMacHosts}). Asserts the hostfile, the printed and the executed commands, the
 * diagnostics and the DOT (rendered by Graphviz).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ConfigMacIT {
    private FakeMacHosts macs;

    @BeforeAll
    void start() {
        Requirements.require(Requirements.command("dot", "graphviz"));
        macs = new FakeMacHosts(4, "mac");
    }

    @AfterAll
    void stop() {
        if (macs != null) {
            macs.close();
        }
    }

    private static String hosts(int n) {
        return String.join(",", List.of("mac0", "mac1", "mac2", "mac3").subList(0, n));
    }

    @Test
    void fourMeshWithAutoSetupWritesJacclAndConfiguresEveryCable(@TempDir Path dir) throws Exception {
        macs.use("mesh4", "m0", "m1", "m2", "m3");
        Path out = dir.resolve("mesh.json");
        CommandResult r = macs.jdist("config", "--hosts", hosts(4), "--auto-setup", "--output", out.toString(), "--verbose");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout()).isEqualTo("Running auto setup for mac0\n\nRunning auto setup for mac1\n\n"
                + "Running auto setup for mac2\n\nRunning auto setup for mac3\n\n");
        String json = Files.readString(out);
        assertThat(json).doesNotEndWith("\n").startsWith("{\n    \"backend\": \"jaccl\",\n    \"envs\": [],\n");
        assertThat(json.replaceAll("\\s", "")).contains(
                "{\"ssh\":\"mac0\",\"ips\":[\"10.0.0.11\"],\"rdma\":[null,\"rdma_en2\",\"rdma_en3\",\"rdma_en4\"]}",
                "{\"ssh\":\"mac1\",\"ips\":[\"10.0.0.12\"],\"rdma\":[\"rdma_en2\",null,\"rdma_en3\",\"rdma_en4\"]}",
                "{\"ssh\":\"mac3\",\"ips\":[\"10.0.0.14\"],\"rdma\":[\"rdma_en2\",\"rdma_en3\",\"rdma_en4\",null]}");
        // cables in discovery order: m0-m1 .1/.2, m0-m2 .5/.6, m0-m3 .9/.10, m1-m2 .13/.14, m1-m3 .17/.18, m2-m3 .21/.22
        assertThat(macs.sudoCommands(0)).containsExactly("sudo ifconfig bridge0 down",
                "sudo ifconfig en2 inet 192.168.0.1 netmask 255.255.255.252", "sudo route change 192.168.0.2 -interface en2",
                "sudo ifconfig en3 inet 192.168.0.5 netmask 255.255.255.252", "sudo route change 192.168.0.6 -interface en3",
                "sudo ifconfig en4 inet 192.168.0.9 netmask 255.255.255.252", "sudo route change 192.168.0.10 -interface en4");
        assertThat(macs.sudoCommands(3)).containsExactly("sudo ifconfig bridge0 down",
                "sudo ifconfig en2 inet 192.168.0.10 netmask 255.255.255.252", "sudo route change 192.168.0.9 -interface en2",
                "sudo ifconfig en3 inet 192.168.0.18 netmask 255.255.255.252", "sudo route change 192.168.0.17 -interface en3",
                "sudo ifconfig en4 inet 192.168.0.22 netmask 255.255.255.252", "sudo route change 192.168.0.21 -interface en4");
        // the stubs saw MLX's exact commands, in the reference's order
        assertThat(macs.received(1)).containsSubsequence("sudo ls", "system_profiler SPThunderboltDataType -json",
                "networksetup -listallhardwareports", "ibv_devices", "ipconfig getifaddr en0", "sudo ifconfig bridge0 down");
        assertThat(r.stderr()).contains("[INFO] Running ssh -o BatchMode=yes -o ConnectTimeout=5 mac2 sudo ifconfig bridge0 down ; ");
    }

    @Test
    void threeMeshAsRingPrintsTheCommandsAndRunsNone() {
        macs.use("mesh3", "h0", "h1", "h2");
        CommandResult r = macs.jdist("config", "--hosts", hosts(3), "--backend", "ring");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout()).isEqualTo("""
                Setup for mac0
                ==============
                sudo ifconfig bridge0 down
                sudo ifconfig en2 inet 192.168.0.1 netmask 255.255.255.252
                sudo route change 192.168.0.2 -interface en2
                sudo ifconfig en3 inet 192.168.0.5 netmask 255.255.255.252
                sudo route change 192.168.0.6 -interface en3

                Enter to continue
                Setup for mac1
                ==============
                sudo ifconfig bridge0 down
                sudo ifconfig en2 inet 192.168.0.2 netmask 255.255.255.252
                sudo route change 192.168.0.1 -interface en2
                sudo ifconfig en3 inet 192.168.0.9 netmask 255.255.255.252
                sudo route change 192.168.0.10 -interface en3

                Enter to continue
                Setup for mac2
                ==============
                sudo ifconfig bridge0 down
                sudo ifconfig en2 inet 192.168.0.6 netmask 255.255.255.252
                sudo route change 192.168.0.5 -interface en2
                sudo ifconfig en3 inet 192.168.0.10 netmask 255.255.255.252
                sudo route change 192.168.0.9 -interface en3

                Enter to continue
                Hostfile
                ========
                {
                    "backend": "ring",
                    "envs": [],
                    "hosts": [
                        {
                            "ssh": "mac0",
                            "ips": [
                                "192.168.0.5"
                            ],
                            "rdma": []
                        },
                        {
                            "ssh": "mac1",
                            "ips": [
                                "192.168.0.2"
                            ],
                            "rdma": []
                        },
                        {
                            "ssh": "mac2",
                            "ips": [
                                "192.168.0.10"
                            ],
                            "rdma": []
                        }
                    ]
                }
                """);
        for (int i = 0; i < 3; i++) {
            assertThat(macs.sudoCommands(i)).isEmpty();
            assertThat(macs.received(i)).noneMatch(c -> c.startsWith("ifconfig") || c.startsWith("ibv_devices"));
        }
    }

    @Test
    void twoMeshTb5WithoutSudoOnOneHostFallsBackToPrintedCommands() {
        macs.use("tb5", "t0", "t1");
        CommandResult r = macs.jdist("config", "--hosts", hosts(2), "--auto-setup");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stderr()).contains("[WARN] Automatic setup requested but the following hosts do not have passwordless sudo \n"
                + "[WARN]  -  mac1 \n");
        assertThat(r.stdout()).startsWith("Setup for mac0\n").contains("Setup for mac1\n", "\"backend\": \"jaccl\"");
        assertThat(macs.sudoCommands(0)).isEmpty();
        assertThat(macs.sudoCommands(1)).isEmpty();
    }

    @Test
    void doubleCableRingIsJacclRingOrRing() {
        macs.use("ring4", "r0", "r1", "r2", "r3");
        CommandResult auto = macs.jdist("config", "--hosts", hosts(4));
        assertThat(auto.exitCode()).as(auto.toString()).isZero();
        assertThat(auto.stdout().replaceAll("\\s", "")).contains("\"backend\":\"jaccl-ring\"",
                "{\"ssh\":\"mac0\",\"ips\":[\"10.0.0.11\"],\"rdma\":[null,[\"rdma_en2\",\"rdma_en3\"],null,[\"rdma_en4\",\"rdma_en5\"]]}");
        CommandResult ring = macs.jdist("config", "--hosts", hosts(4), "--backend", "ring");
        assertThat(ring.exitCode()).as(ring.toString()).isZero();
        assertThat(ring.stdout().replaceAll("\\s", "")).contains(
                "{\"ssh\":\"mac0\",\"ips\":[\"192.168.0.9\",\"192.168.0.13\"],\"rdma\":[]}",
                "{\"ssh\":\"mac1\",\"ips\":[\"192.168.0.2\",\"192.168.0.6\"],\"rdma\":[]}",
                "{\"ssh\":\"mac2\",\"ips\":[\"192.168.0.18\",\"192.168.0.22\"],\"rdma\":[]}",
                "{\"ssh\":\"mac3\",\"ips\":[\"192.168.0.26\",\"192.168.0.30\"],\"rdma\":[]}");
    }

    @Test
    void brokenMeshNamesTheMissingCable() {
        macs.use("broken-mesh", "m0", "m1", "m2", "m3");
        CommandResult r = macs.jdist("config", "--hosts", hosts(4), "--backend", "jaccl");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.stderr()).contains("[ERROR] Incomplete mesh, mac1 is not connected to mac3 \n[ERROR]  \n"
                        + "[ERROR] Try passing --dot to visualize the connectivity \n",
                "mac1 <-> mac3: connect a free port of mac1 (en4 = Thunderbolt 3, en5 = Thunderbolt 4) to a free port of"
                        + " mac3 (en3 = Thunderbolt 2, en5 = Thunderbolt 4)");
        assertThat(r.stdout()).isEmpty();
    }

    @Test
    void miswiredCableIsExplained() {
        macs.use("miswired", "h0", "h1", "h2");
        CommandResult r = macs.jdist("config", "--hosts", hosts(3));
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.stderr()).contains("[ERROR] Neither thunderbolt mesh nor ring found. ",
                "[ERROR] Perhaps run with --dot to generate a plot of the connectivity. ",
                "Miswired: mac0 en3 (Thunderbolt 2) is cabled to mac0's own en4",
                "mac2 en2 (Thunderbolt 1) is cabled to a Mac that is not in the host list",
                "mac0 <-> mac2: connect a free port of mac0 (none free: every port is in use)");
    }

    @Test
    void thunderbolt4GivesARingAndSaysWhyThereIsNoRdma() {
        macs.use("tb4", "t0", "t1");
        CommandResult r = macs.jdist("config", "--hosts", hosts(2));
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout()).contains("\"backend\": \"ring\"");
        assertThat(r.stderr()).contains("[WARN] mac0 does not seem to have RDMA enabled ",
                "mac0 has Thunderbolt 4 ports (Up to 40 Gb/s): RDMA over Thunderbolt needs Thunderbolt 5",
                "rdma_ctl enable");
        CommandResult strict = macs.jdist("config", "--hosts", hosts(2), "--backend", "jaccl-ring");
        assertThat(strict.exitCode()).isEqualTo(1);
        assertThat(strict.stderr()).contains("[ERROR] mac1 does not seem to have RDMA enabled ");
    }

    @Test
    void dotOutputRendersWithGraphviz(@TempDir Path dir) throws Exception {
        macs.use("ring4", "r0", "r1", "r2", "r3");
        CommandResult r = macs.jdist("config", "--hosts", hosts(4), "--dot");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout()).startsWith("graph G {\n  node [shape=rectangle];\n  a [label=\"mac0\"];\n")
                .contains("  a -- b [label=\"en2/en2\"]\n  a -- b [label=\"en3/en3\"]\n  a -- d [label=\"en4/en4\"]\n");
        for (int i = 0; i < 4; i++) { // --dot stops before the RDMA probe and any setup
            assertThat(macs.received(i)).noneMatch(c -> c.startsWith("ibv_devices") || c.startsWith("ipconfig"));
        }
        Path dot = dir.resolve("wiring.dot");
        Files.writeString(dot, r.stdout());
        CommandResult svg = CommandResult.run(Duration.ofSeconds(60), "dot", "-Tsvg", dot.toString());
        assertThat(svg.exitCode()).as(svg.toString()).isZero();
        assertThat(svg.stdout()).contains("<svg", ">mac0<", ">mac3<", ">en5/en5<");
    }

    @Test
    void unreachableHostIsNamedAndNothingHangs() {
        macs.use("tb5", "t0", "t1");
        String down = macs.cluster.unusedAddress();
        long start = System.nanoTime();
        CommandResult r = macs.jdist("config", "--hosts", "mac0," + down);
        assertThat(r.timedOut()).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(90));
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.stderr()).contains("[ERROR] Could not ssh to the following hosts: \n[ERROR]   -  " + down + " \n",
                "[ERROR] Maybe they are not set-up for password-less ssh? ", down + ": ");
        assertThat(macs.received(0)).noneMatch(c -> c.startsWith("system_profiler"));

        CommandResult ignored = macs.jdist("config", "--hosts", down + ",mac0,mac1", "--ignore-unreachable");
        assertThat(ignored.exitCode()).as(ignored.toString()).isZero();
        assertThat(ignored.stderr()).contains("[WARN] Ignoring hosts that ssh cannot reach: " + down);
        assertThat(ignored.stdout()).contains("\"ssh\": \"mac0\"").doesNotContain(down);
    }

    @Test
    void ethernetRecordsEachPrimaryAddress() {
        macs.use("mesh3", "h0", "h1", "h2");
        CommandResult r = macs.jdist("config", "--hosts", hosts(3), "--over", "ethernet", "--env", "MLX_METAL_FAST_SYNCH=1");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout().replaceAll("\\s", "")).isEqualTo("Hostfile========{\"backend\":\"\",\"envs\":[\"MLX_METAL_FAST_SYNCH=1\"],"
                + "\"hosts\":[{\"ssh\":\"mac0\",\"ips\":[\"10.0.0.11\"],\"rdma\":[]},{\"ssh\":\"mac1\",\"ips\":[\"10.0.0.12\"],"
                + "\"rdma\":[]},{\"ssh\":\"mac2\",\"ips\":[\"10.0.0.13\"],\"rdma\":[]}]}");
        assertThat(macs.received(0)).containsExactly("sudo ls", "ipconfig getifaddr en0");
    }

}
