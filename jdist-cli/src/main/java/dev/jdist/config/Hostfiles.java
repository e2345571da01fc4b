package dev.jdist.config;

import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/** Builds the hostfile for each backend ({@code docs/reference/distributed-config.md} §10) from the hosts, the topology and the IP plan. */
public final class Hostfiles {
    private Hostfiles() {
    }

    /**
     * Ring over Thunderbolt: hosts in ring order; host k's {@code ips} are its first {@code count} addresses
     * on the cables facing its left neighbour; {@code rdma} empty. No IP discovery.
     */
    public static Hostfile ring(List<HostEntry> hosts, IpPlan plan, RingSearch.Ring ring, List<String> envs) {
        List<Integer> v = ring.cycle();
        int n = v.size();
        List<HostEntry> out = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            int left = v.get(Math.floorMod(k - 1, n));
            List<String> ips = new ArrayList<>();
            List<IpPlan.LinkEnd> ends = plan.links(v.get(k), left);
            for (int c = 0; c < ring.count() && c < ends.size(); c++) {
                ips.add(ends.get(c).ip());
            }
            out.add(new HostEntry(hosts.get(v.get(k)).ssh(), ips));
        }
        return new Hostfile("ring", envs, out);
    }

    /**
     * JACCL mesh: hosts in input order with their (discovered) IPs; row i has null at i and at j the RDMA device of
     * i's interface on the first cable to j.
     *
     * @param device (host index, interface) → RDMA device name ({@code "rdma_" + iface} on macOS)
     */
    public static Hostfile jaccl(List<HostEntry> hosts, IpPlan plan, BiFunction<Integer, String, String> device,
            List<String> envs) {
        int n = hosts.size();
        List<HostEntry> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<Object> row = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                List<IpPlan.LinkEnd> ends = plan.links(i, j);
                row.add(i == j || ends.isEmpty() ? null : device.apply(i, ends.getFirst().iface()));
            }
            out.add(new HostEntry(hosts.get(i).ssh(), hosts.get(i).ips(), row));
        }
        return new Hostfile("jaccl", envs, out);
    }

    /**
     * JACCL ring: hosts in ring order with their (discovered) IPs; row k has, at each ring neighbour's position, the
     * devices of the first {@code count} cables to it (a string when count is 1, a list otherwise), null elsewhere.
     */
    public static Hostfile jacclRing(List<HostEntry> hosts, IpPlan plan, RingSearch.Ring ring,
            BiFunction<Integer, String, String> device, List<String> envs) {
        List<Integer> v = ring.cycle();
        int n = v.size();
        List<HostEntry> out = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            int vk = v.get(k);
            int left = v.get(Math.floorMod(k - 1, n));
            int right = v.get((k + 1) % n);
            List<Object> row = new ArrayList<>();
            for (int m = 0; m < n; m++) {
                int vm = v.get(m);
                if (m == k || (vm != left && vm != right)) {
                    row.add(null);
                    continue;
                }
                List<IpPlan.LinkEnd> ends = plan.links(vk, vm);
                List<String> devices = new ArrayList<>();
                for (int c = 0; c < ring.count() && c < ends.size(); c++) {
                    devices.add(device.apply(vk, ends.get(c).iface()));
                }
                row.add(ring.count() == 1 ? devices.getFirst() : devices);
            }
            out.add(new HostEntry(hosts.get(vk).ssh(), hosts.get(vk).ips(), row));
        }
        return new Hostfile("jaccl-ring", envs, out);
    }

    /** Ethernet: hosts in input order with their (discovered) IPs, no RDMA, backend "" (launch's default). */
    public static Hostfile ethernet(List<HostEntry> hosts, List<String> envs) {
        return new Hostfile("", envs,
                hosts.stream().map(h -> new HostEntry(h.ssh(), h.ips())).toList());
    }
}
