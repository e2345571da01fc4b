package dev.jdist.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Linux extension ({@code docs/reference/distributed-config.md} §12): addresses from {@code ip -j}, Thunderbolt cables from
 * sysfs (the {@code thunderbolt-net} interfaces and their XDomain peers), RDMA devices from {@code rdma -j link show}
 * or {@code ibv_devices}, and the plan applied with {@code ip}.
 */
public final class LinuxPlatform implements HostPlatform {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Prints one line per Thunderbolt network interface: {@code IFNAME LOCAL_UUID REMOTE_UUID LANE_SPEED LANES}. The interface's
     * device is an XDomain service ({@code 0-1.0}); its parent is the XDomain ({@code 0-1}, the remote host's
     * {@code unique_id}) whose parent is the local host router ({@code 0-0}, our {@code unique_id}).
     */
    static final String THUNDERBOLT_SCRIPT = "for n in /sys/class/net/*; do"
            + " d=$(readlink -f \"$n/device\" 2>/dev/null) || continue;"
            + " case \"$d\" in */thunderbolt/*)"
            + " x=$(dirname \"$d\"); s=$(cat \"$x/rx_speed\" 2>/dev/null | tr -d ' '); l=$(cat \"$x/rx_lanes\" 2>/dev/null);"
            + " echo \"${n##*/} $(cat \"$(dirname \"$x\")/unique_id\" 2>/dev/null) $(cat \"$x/unique_id\" 2>/dev/null) ${s:--} ${l:-1}\";;"
            + " esac; done";

    @Override
    public String name() {
        return "linux";
    }

    /** {@code prefsrc} of the route to a public address (no packet is sent), else the first global IPv4 address. */
    @Override
    public Optional<String> primaryIp(RemoteCalls calls, String host) {
        RemoteShell.Result route = calls.run(host, "ip", "-j", "route", "get", "1.1.1.1");
        if (route.exitCode() == 0) {
            JsonNode routes = parse(route.stdout());
            if (routes != null && routes.isArray() && !routes.isEmpty()) {
                String src = routes.get(0).path("prefsrc").asText("");
                if (!src.isEmpty()) {
                    return Optional.of(src);
                }
            }
        }
        RemoteShell.Result addrs = calls.run(host, "ip", "-j", "-4", "addr", "show");
        return firstGlobalInet(addrs.stdout());
    }

    static Optional<String> firstGlobalInet(String ipJsonAddr) {
        JsonNode links = parse(ipJsonAddr);
        if (links == null || !links.isArray()) {
            return Optional.empty();
        }
        for (JsonNode link : links) {
            for (JsonNode a : link.path("addr_info")) {
                if ("inet".equals(a.path("family").asText()) && "global".equals(a.path("scope").asText())
                        && !a.path("local").asText("").isEmpty()) {
                    return Optional.of(a.path("local").asText());
                }
            }
        }
        return Optional.empty();
    }

    @Override
    public List<HostWiring> wiring(RemoteCalls calls, List<String> hosts) {
        List<HostWiring> wiring = new ArrayList<>();
        for (String host : hosts) {
            calls.log().info("Getting connectivity from " + host);
            wiring.add(parseThunderboltNet(host, calls.output(host, THUNDERBOLT_SCRIPT)));
        }
        return wiring;
    }

    /**
     * Turns the script's lines into ports. Linux identifies a host (domain), not a receptacle, so the k-th cable between
     * domains L and R (in interface order) gets identity {@code L>R#k} and peer {@code R>L#k}: the same port model and
     * matching as macOS.
     */
    static HostWiring parseThunderboltNet(String host, String text) {
        List<String[]> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            String[] f = line.strip().split("\\s+");
            if (f.length < 3 || f[0].isEmpty()) {
                continue;
            }
            rows.add(f);
        }
        rows.sort((a, b) -> a[0].compareTo(b[0]));
        Map<String, Integer> seen = new HashMap<>();
        List<ThunderboltPort> ports = new ArrayList<>();
        for (String[] f : rows) {
            String local = f[1];
            String remote = f[2];
            int k = seen.merge(local + ">" + remote, 1, Integer::sum) - 1;
            String speed = null;
            if (f.length > 3 && !"-".equals(f[3])) {
                int lanes = f.length > 4 && f[4].matches("[1-9]") ? Integer.parseInt(f[4]) : 1;
                long total = Math.round(ThunderboltPort.gigabits(f[3].replace("Gb/s", " Gb/s")) * (double) lanes);
                speed = "Up to " + total + " Gb/s"; // rx_speed is per lane
            }
            ports.add(new ThunderboltPort(f[0], f[0], local + ">" + remote + "#" + k, remote + ">" + local + "#" + k, speed));
        }
        return new HostWiring(host, ports);
    }

    /** {@code rdma -j link show} (device → netdev); without it, the device names {@code ibv_devices} lists. */
    @Override
    public RdmaReport rdma(RemoteCalls calls, String host) {
        RemoteShell.Result links = calls.run(host, "rdma", "-j", "link", "show");
        if (links.exitCode() == 0) {
            JsonNode arr = parse(links.stdout());
            if (arr != null && arr.isArray() && !arr.isEmpty()) {
                Map<String, String> byIface = new LinkedHashMap<>();
                List<String> devices = new ArrayList<>();
                for (JsonNode l : arr) {
                    String dev = l.path("ifname").asText("");
                    if (dev.isEmpty()) {
                        continue;
                    }
                    if (!devices.contains(dev)) {
                        devices.add(dev);
                    }
                    String netdev = l.path("netdev").asText("");
                    if (!netdev.isEmpty()) {
                        byIface.putIfAbsent(netdev, dev);
                    }
                }
                return new RdmaReport(devices, byIface);
            }
        }
        String out = calls.run(host, "ibv_devices").stdout();
        return new RdmaReport(ibvDeviceNames(out), Map.of());
    }

    /** The device names {@code ibv_devices} lists below its {@code ------} header line (anything else is a message). */
    static List<String> ibvDeviceNames(String out) {
        List<String> devices = new ArrayList<>();
        boolean table = false;
        for (String line : out.split("\n")) {
            String[] f = line.strip().split("\\s+");
            if (f[0].startsWith("---")) {
                table = true;
            } else if (table && !f[0].isEmpty()) {
                devices.add(f[0]);
            }
        }
        return devices;
    }

    @Override
    public String rdmaDevice(RdmaReport report, String iface) {
        String dev = report.deviceByInterface().get(iface);
        if (dev == null && report.devices().size() == 1 && report.deviceByInterface().isEmpty()) {
            dev = report.devices().getFirst();
        }
        return dev;
    }

    @Override
    public List<String> setupCommands(int i, IpPlan plan) {
        List<String> lines = new ArrayList<>();
        for (int j = 0; j < plan.size(); j++) {
            if (j == i) {
                continue;
            }
            List<IpPlan.LinkEnd> mine = plan.links(i, j);
            List<IpPlan.LinkEnd> theirs = plan.links(j, i);
            for (int k = 0; k < mine.size(); k++) {
                String iface = mine.get(k).iface();
                lines.add("sudo ip addr replace " + mine.get(k).ip() + "/30 dev " + iface);
                lines.add("sudo ip link set " + iface + " up");
                lines.add("sudo ip route replace " + theirs.get(k).ip() + "/32 dev " + iface);
            }
        }
        return lines;
    }

    @Override
    public String rdmaHelp() {
        return "On Linux, RDMA needs an RDMA-capable NIC with its driver and rdma-core (check with `rdma link show`"
                + " or `ibv_devices`); for testing, Soft-RoCE works: `sudo rdma link add rxe0 type rxe netdev IFACE`."
                + " See docs/config.md#rdma";
    }

    private static JsonNode parse(String text) {
        try {
            return JSON.readTree(text);
        } catch (JacksonException e) {
            return null;
        }
    }

}
