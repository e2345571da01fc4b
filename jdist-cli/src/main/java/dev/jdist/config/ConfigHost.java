package dev.jdist.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One host as {@code jdist config} sees it: the ssh target and the addresses already known for it
 * (from an IP literal in {@code --hosts} or the {@code ips} of a {@code --hostfile}).
 */
public record ConfigHost(String ssh, List<String> ips) {
    public ConfigHost {
        Objects.requireNonNull(ssh, "ssh");
        ips = List.copyOf(ips);
    }

    public ConfigHost withIp(String ip) {
        List<String> more = new ArrayList<>(ips);
        more.add(ip);
        return new ConfigHost(ssh, more);
    }
}
