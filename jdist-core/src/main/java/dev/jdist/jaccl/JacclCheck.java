package dev.jdist.jaccl;

import dev.jdist.ConfigException;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code java --enable-native-access=ALL-UNNAMED -cp jdist.jar dev.jdist.jaccl.JacclCheck [device-file]}:
 * says whether this host can run JACCL — the ibverbs library, every RDMA device with its port state and
 * the IPv4-mapped GID JACCL will publish — and, given a device file (argument or {@code MLX_IBV_DEVICES})
 * and {@code MLX_RANK}, whether the devices this rank's row names exist here. Exit 0 when all is well,
 * 1 when something needs fixing (including: no RDMA device at all), 2 when the library cannot be used.
 */
public final class JacclCheck {
    private JacclCheck() {}

    public static void main(String[] args) {
        System.exit(run(args, System.getenv(), System.out));
    }

    static int run(String[] args, Map<String, String> env, PrintStream out) {
        String lib = env.getOrDefault("JDIST_JACCL_LIB", "").isBlank() ? Verbs.defaultLibrary() : env.get("JDIST_JACCL_LIB").trim();
        Verbs v;
        try {
            v = Verbs.load(lib);
        } catch (ConfigException e) {
            out.println("library: " + e.getMessage());
            return 2;
        }
        out.println("library: " + lib + " (loaded; all " + Verbs.REQUIRED_SYMBOLS.size() + " symbols resolve)");
        boolean ok = true;
        List<VerbsTransport.DeviceInfo> devices;
        try {
            devices = VerbsTransport.describeDevices(v);
        } catch (RuntimeException e) {
            out.println("devices: cannot list them: " + e.getMessage());
            return 1;
        }
        out.println("devices: " + devices.size() + (devices.isEmpty()
                ? " (none: on macOS 26.2+ run `rdma_ctl enable` in the recovery OS and connect Thunderbolt 5 cables;"
                  + " on Linux load an RDMA driver or soft-RoCE)" : ""));
        if (devices.isEmpty()) ok = false;
        for (VerbsTransport.DeviceInfo d : devices) {
            StringBuilder line = new StringBuilder("  " + d.name() + ": ");
            if (d.portState() >= 0) {
                line.append("port 1 ").append(portState(d.portState())).append(", lid ").append(d.lid())
                        .append(", ").append(d.gidTableLength()).append(" GIDs");
            }
            if (d.ipv4GidIndex() >= 0) {
                line.append(", IPv4-mapped GID at index ").append(d.ipv4GidIndex()).append(" (")
                        .append(ipv4(d.ipv4Gid())).append(')');
            }
            if (d.problem() != null) line.append(" — ").append(d.problem());
            out.println(line);
        }
        String file = args.length > 0 ? args[0] : env.getOrDefault("MLX_IBV_DEVICES", env.get("JACCL_IBV_DEVICES"));
        if (file != null && !file.isBlank()) {
            try {
                DeviceMatrix m = DeviceMatrix.read(Path.of(file), args.length > 0 ? "the argument" : "MLX_IBV_DEVICES");
                out.println("device file: " + file + ", " + m.size() + " ranks; mesh: "
                        + m.meshProblem().orElse("valid") + "; ring: " + m.ringProblem().map(p -> p).orElse("valid, " + m.ringWires() + " wire(s)"));
                String rankText = env.getOrDefault("JACCL_RANK", env.get("MLX_RANK"));
                if (rankText != null && !rankText.isBlank()) {
                    int rank = JacclConfig.parseRank("MLX_RANK", rankText);
                    if (rank >= m.size()) {
                        out.println("rank " + rank + ": not in the file (it has " + m.size() + " rows)");
                        ok = false;
                    } else {
                        for (int p = 0; p < m.size(); p++) {
                            for (String dev : m.devices(rank, p)) {
                                VerbsTransport.DeviceInfo d = devices.stream().filter(x -> x.name().equals(dev)).findFirst().orElse(null);
                                String verdict = d == null ? "MISSING on this host" : d.problem() == null ? "present" : "present but " + d.problem();
                                out.println("rank " + rank + " -> rank " + p + ": " + dev + " " + verdict);
                                ok &= d != null && d.problem() == null;
                            }
                        }
                    }
                }
            } catch (ConfigException e) {
                out.println("device file: " + e.getMessage());
                ok = false;
            }
        }
        return ok ? 0 : 1;
    }

    private static String portState(int state) {
        return switch (state) {
            case 1 -> "DOWN";
            case 2 -> "INIT";
            case 3 -> "ARMED";
            case 4 -> "ACTIVE";
            case 5 -> "ACTIVE_DEFER";
            default -> "state " + state;
        };
    }

    private static String ipv4(byte[] gid) {
        return String.format(Locale.ROOT, "%d.%d.%d.%d", gid[12] & 0xFF, gid[13] & 0xFF, gid[14] & 0xFF, gid[15] & 0xFF);
    }
}
