package dev.jdist.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The macOS commands of {@code docs/reference/distributed-config.md} §4, §6.4 and §9, exactly as MLX runs them. */
public final class MacOsPlatform implements HostPlatform {

    @Override
    public String name() {
        return "macos";
    }

    @Override
    public Optional<String> primaryIp(RemoteCalls calls, String host) {
        for (String iface : List.of("en0", "en1")) {
            String ip = calls.run(host, "ipconfig", "getifaddr", iface).stdout().strip();
            if (!ip.isEmpty()) {
                return Optional.of(ip);
            }
        }
        return Optional.empty();
    }

    /** {@code system_profiler SPThunderboltDataType -json} on every host, then {@code networksetup -listallhardwareports}. */
    @Override
    public List<HostWiring> wiring(RemoteCalls calls, List<String> hosts) {
        List<String> profiles = new ArrayList<>();
        for (String host : hosts) {
            calls.log().info("Getting connectivity from " + host);
            profiles.add(calls.output(host, "system_profiler", "SPThunderboltDataType", "-json"));
        }
        List<Map<String, String>> ports = new ArrayList<>();
        for (String host : hosts) {
            calls.log().info("Getting interface names from " + host);
            ports.add(HardwarePorts.parse(calls.output(host, "networksetup", "-listallhardwareports")));
        }
        List<HostWiring> wiring = new ArrayList<>();
        for (int i = 0; i < hosts.size(); i++) {
            wiring.add(SystemProfilerThunderbolt.parse(hosts.get(i), profiles.get(i), ports.get(i)));
        }
        return wiring;
    }

    @Override
    public RdmaReport rdma(RemoteCalls calls, String host) {
        String out = calls.run(host, "ibv_devices").stdout();
        List<String> devices = Arrays.stream(out.split("\\s+")).filter(w -> w.startsWith("rdma_")).toList();
        return new RdmaReport(devices, Map.of());
    }

    @Override
    public String rdmaDevice(RdmaReport report, String iface) {
        return "rdma_" + iface;
    }

    @Override
    public List<String> setupCommands(int i, IpPlan plan) {
        List<String> lines = new ArrayList<>();
        lines.add("sudo ifconfig bridge0 down");
        for (int j = 0; j < plan.size(); j++) {
            if (j == i) {
                continue;
            }
            List<IpPlan.LinkEnd> mine = plan.links(i, j);
            List<IpPlan.LinkEnd> theirs = plan.links(j, i);
            for (int k = 0; k < mine.size(); k++) {
                lines.add("sudo ifconfig " + mine.get(k).iface() + " inet " + mine.get(k).ip() + " netmask " + IpPlan.NETMASK);
                lines.add("sudo route change " + theirs.get(k).ip() + " -interface " + mine.get(k).iface());
            }
        }
        return lines;
    }

    @Override
    public String rdmaHelp() {
        return "RDMA over Thunderbolt needs Thunderbolt 5 and macOS 26.2 or later, and must be enabled on each Mac:"
                + " boot into recovery (hold the power button), open Terminal, run `rdma_ctl enable`, reboot."
                + " It cannot be done over ssh. See docs/config.md#rdma";
    }
}
