package dev.jdist.config;

import dev.jdist.launch.HostEntry;
import dev.jdist.launch.Hostfile;

import java.nio.file.Path;
import java.util.List;

/**
 * The hosts {@code jdist config} works on: {@code --hosts} parsed as {@code launcher.md} §2.2, or the {@code ssh} and
 * {@code ips} of a {@code --hostfile} (§2.4; its {@code backend}, {@code envs} and {@code rdma} are ignored). Uses the
 * launcher's own hostfile model, so both commands accept and reject exactly the same files; errors are usage errors
 * with the launcher's messages.
 */
public final class HostList {
    private HostList() {
    }

    public static List<ConfigHost> fromHosts(String list) {
        return toConfigHosts(dev.jdist.launch.HostList.parse(list, 1));
    }

    public static List<ConfigHost> fromHostfile(Path path) {
        return toConfigHosts(Hostfile.read(path.toString()).hosts());
    }

    private static List<ConfigHost> toConfigHosts(List<HostEntry> entries) {
        return entries.stream().map(e -> new ConfigHost(e.ssh(), e.ips())).toList();
    }
}
