package dev.jdist.config;

import dev.jdist.console.ConsoleLog;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The Linux extension's parsing and commands, from recorded {@code ip}, {@code rdma}, {@code ibv_devices} and sysfs outputs. */
class LinuxPlatformTest {

    /** A shell answering from a map of "host: command" → stdout; anything else exits 1. */
    static RemoteCalls calls(Map<String, String> answers, List<String> seen) {
        RemoteShell shell = new RemoteShell() {
            @Override
            public Result run(String host, List<String> remoteArgs, Duration deadline) {
                String key = host + ": " + String.join(" ", remoteArgs);
                seen.add(key);
                String out = answers.get(key);
                return out == null ? new Result(1, "", "no answer\n", false) : new Result(0, out, "", false);
            }

            @Override
            public List<String> commandLine(String host, List<String> remoteArgs) {
                return List.of("ssh", host);
            }
        };
        return new RemoteCalls(shell, new ConsoleLog(new PrintStream(new ByteArrayOutputStream()), false, false));
    }

    @Test
    void primaryIpFromTheRouteSource() {
        List<String> seen = new ArrayList<>();
        var c = calls(Map.of("n1: ip -j route get 1.1.1.1",
                "[{\"dst\":\"1.1.1.1\",\"gateway\":\"10.0.0.1\",\"dev\":\"eth0\",\"prefsrc\":\"10.0.0.5\",\"flags\":[],\"uid\":0,\"cache\":[]}]"), seen);
        assertThat(new LinuxPlatform().primaryIp(c, "n1")).hasValue("10.0.0.5");
        assertThat(seen).containsExactly("n1: ip -j route get 1.1.1.1");
    }

    @Test
    void primaryIpFallsBackToTheFirstGlobalAddress() {
        List<String> seen = new ArrayList<>();
        var c = calls(Map.of("n1: ip -j -4 addr show", """
                [{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,"scope":"host","label":"lo"}]},
                 {"ifindex":2,"ifname":"eth0","flags":["UP"],"addr_info":[{"family":"inet","local":"10.222.7.11","prefixlen":24,"scope":"global","label":"eth0"}]}]
                """), seen);
        assertThat(new LinuxPlatform().primaryIp(c, "n1")).hasValue("10.222.7.11");
        assertThat(seen).containsExactly("n1: ip -j route get 1.1.1.1", "n1: ip -j -4 addr show");
        assertThat(new LinuxPlatform().primaryIp(calls(Map.of(), new ArrayList<>()), "n1")).isEmpty();
    }

    @Test
    void thunderboltNetInterfacesBecomePortsMatchedByDomain() {
        // host A (domain AAAA) has two cables to host B (domain BBBB) on thunderbolt0/1; B sees them on thunderbolt1/0.
        HostWiring a = LinuxPlatform.parseThunderboltNet("a", "thunderbolt1 AAAA BBBB 40.0Gb/s 2\nthunderbolt0 AAAA BBBB 20.0Gb/s 2\n");
        HostWiring b = LinuxPlatform.parseThunderboltNet("b", "thunderbolt0 BBBB AAAA -\nthunderbolt1 BBBB AAAA -\n");
        assertThat(a.ports()).extracting(ThunderboltPort::iface).containsExactly("thunderbolt0", "thunderbolt1");
        assertThat(a.ports()).extracting(ThunderboltPort::generation).containsExactly(4, 5); // rx_speed is per lane
        ThunderboltTopology t = new ThunderboltTopology(List.of(a, b));
        assertThat(t.connectivity()).isDeepEqualTo(new int[][] {{0, 2}, {2, 0}});
        assertThat(DotWriter.write(t)).contains("a -- b [label=\"thunderbolt0/thunderbolt0\"]", "a -- b [label=\"thunderbolt1/thunderbolt1\"]");
    }

    @Test
    void rdmaDevicesFromRdmaLinkWithTheirInterfaces() {
        var c = calls(Map.of("n1: rdma -j link show",
                "[{\"ifindex\":1,\"ifname\":\"mlx5_0\",\"port\":1,\"state\":\"ACTIVE\",\"physical_state\":\"LINK_UP\",\"netdev\":\"enp1s0f0\",\"netdev_index\":4},"
                        + "{\"ifindex\":2,\"ifname\":\"rxe0\",\"port\":1,\"state\":\"ACTIVE\",\"physical_state\":\"LINK_UP\",\"netdev\":\"thunderbolt0\",\"netdev_index\":7}]"),
                new ArrayList<>());
        LinuxPlatform linux = new LinuxPlatform();
        RdmaReport r = linux.rdma(c, "n1");
        assertThat(r.enabled()).isTrue();
        assertThat(r.devices()).containsExactly("mlx5_0", "rxe0");
        assertThat(linux.rdmaDevice(r, "thunderbolt0")).isEqualTo("rxe0");
        assertThat(linux.rdmaDevice(r, "eth9")).isNull();
    }

    @Test
    void rdmaDevicesFromIbvDevicesWhenRdmaLinkIsMissing() {
        var c = calls(Map.of("n1: ibv_devices", "    device          \t   node GUID\n    ------          \t----------------\n    rxe0            \t505400fffe123456\n"),
                new ArrayList<>());
        RdmaReport r = new LinuxPlatform().rdma(c, "n1");
        assertThat(r.devices()).containsExactly("rxe0");
        assertThat(new LinuxPlatform().rdmaDevice(r, "thunderbolt0")).isEqualTo("rxe0"); // the only device
        assertThat(LinuxPlatform.ibvDeviceNames("Failed to get IB devices list: Function not implemented\n")).isEmpty();
    }

    @Test
    void planAppliedWithIpCommands() {
        IpPlan plan = IpPlan.of(MacFixtures.topology("mesh3", "h0", "h1", "h2"));
        assertThat(new LinuxPlatform().setupCommands(0, plan)).containsExactly(
                "sudo ip addr replace 192.168.0.1/30 dev en2", "sudo ip link set en2 up", "sudo ip route replace 192.168.0.2/32 dev en2",
                "sudo ip addr replace 192.168.0.5/30 dev en3", "sudo ip link set en3 up", "sudo ip route replace 192.168.0.6/32 dev en3");
    }
}
