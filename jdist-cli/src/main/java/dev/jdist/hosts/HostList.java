package dev.jdist.hosts;

import dev.jdist.console.CliFailure;

import java.util.ArrayList;
import java.util.List;

/**
 * The {@code --hosts} host list (docs/reference/launcher.md §2.2): comma-separated pieces, each repeated {@code repeat} times
 * consecutively ({@code -n}); a piece that is an IP literal is also the host's address.
 */
public final class HostList {
    private HostList() {
    }

    public static List<HostEntry> parse(String hosts, int repeat) {
        List<HostEntry> out = new ArrayList<>();
        // split with limit -1 keeps trailing empty pieces, so "a," is an error like in MLX
        for (String h : hosts.split(",", -1)) {
            if (h.isEmpty()) {
                throw CliFailure.usage("Hostname cannot be empty in --hosts '" + hosts
                        + "'; write host names or IPs separated by single commas, e.g. --hosts 10.0.0.1,10.0.0.2");
            }
            HostEntry e = new HostEntry(h, IpLiteral.isIp(h) ? List.of(h) : List.of());
            for (int i = 0; i < repeat; i++) {
                out.add(e);
            }
        }
        return out;
    }
}
