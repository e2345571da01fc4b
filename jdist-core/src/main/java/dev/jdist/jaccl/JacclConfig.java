package dev.jdist.jaccl;

import dev.jdist.spi.JdistTimeout;
import dev.jdist.ConfigException;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The JACCL configuration from the environment (docs/reference/collectives.md §4.1). For each item the
 * {@code JACCL_*} name is looked up first, then the {@code MLX_*} name. jdist extensions:
 * {@code JDIST_TIMEOUT} (deadline for set-up and for progress of every operation),
 * {@code JDIST_JACCL_QP} ({@code uc}, the default, or {@code rc}), {@code JDIST_JACCL_LIB} (the
 * ibverbs library), {@code JDIST_JACCL_GID_INDEX} (force the source GID index).
 *
 * @param rank        this process's rank
 * @param devices     the device matrix
 * @param topology    mesh or ring, chosen by the §4.1 rule
 * @param coordinator {@code host:port} of rank 0's side channel (null with a custom side channel)
 * @param timeout     JDIST_TIMEOUT
 * @param qpMode      queue-pair type
 * @param library     the ibverbs library name or path
 * @param gidIndex    a forced source GID index, or empty to use the IPv4-mapped GID found by scanning
 */
public record JacclConfig(int rank, DeviceMatrix devices, Topology topology, String coordinator,
                          Duration timeout, QpMode qpMode, String library, OptionalInt gidIndex) {

    public enum Topology { MESH, RING }

    public enum QpMode { UC, RC }

    public static final Duration DEFAULT_TIMEOUT = JdistTimeout.DEFAULT;

    public int size() { return devices.size(); }

    /** Host part of the coordinator address. */
    public String coordinatorHost() { return splitHostPort(coordinator, "coordinator")[0]; }

    /** Port part of the coordinator address. */
    public int coordinatorPort() { return Integer.parseInt(splitHostPort(coordinator, "coordinator")[1]); }

    /**
     * Reads the configuration.
     *
     * @param customSideChannel true when the caller supplies the side channel (no coordinator needed)
     * @return empty when JACCL is not configured and {@code strict} is false
     * @throws ConfigException when not configured and strict, or configured but wrong (whatever {@code strict} is)
     */
    public static Optional<JacclConfig> fromEnv(Map<String, String> env, boolean strict, boolean customSideChannel) {
        String[] rankVar = lookup(env, "JACCL_RANK", "MLX_RANK");
        String[] devVar = lookup(env, "JACCL_IBV_DEVICES", "MLX_IBV_DEVICES");
        String[] coordVar = lookup(env, "JACCL_COORDINATOR", "MLX_JACCL_COORDINATOR");
        boolean preferRing = env.containsKey("JACCL_RING") || env.containsKey("MLX_JACCL_RING");

        boolean missing = rankVar[1] == null || devVar[1] == null || (!customSideChannel && coordVar[1] == null);
        if (missing) {
            return notConfigured(strict, "JACCL needs MLX_RANK (or JACCL_RANK), MLX_IBV_DEVICES (or JACCL_IBV_DEVICES)"
                    + (customSideChannel ? "" : " and MLX_JACCL_COORDINATOR (or JACCL_COORDINATOR)")
                    + "; seen " + seen(rankVar) + ", " + seen(devVar) + (customSideChannel ? "" : ", " + seen(coordVar))
                    + "; start the program with `jdist launch --backend jaccl` (or jaccl-ring)");
        }
        int rank = parseRank(rankVar[0], rankVar[1]);
        DeviceMatrix matrix = DeviceMatrix.read(Path.of(devVar[1]), devVar[0]);
        int n = matrix.size();
        if (rank >= n) {
            throw new ConfigException(rankVar[0] + "=" + rank + " but the device file " + matrix.source() + " describes "
                    + n + " rank(s) (0.." + (n - 1) + "); give each process a rank below " + n);
        }
        String coordinator = null;
        if (!customSideChannel) {
            coordinator = coordVar[1].trim();
            splitHostPort(coordinator, coordVar[0]); // validates
        }
        Optional<String> meshProblem = matrix.meshProblem();
        Optional<String> ringProblem = matrix.ringProblem();
        Topology topology;
        if (preferRing && ringProblem.isEmpty()) topology = Topology.RING;
        else if (meshProblem.isEmpty()) topology = Topology.MESH;
        else if (ringProblem.isEmpty()) topology = Topology.RING;
        else {
            return notConfigured(strict, "the JACCL device file " + matrix.source() + " is neither a valid mesh ("
                    + meshProblem.get() + ") nor a valid ring (" + ringProblem.get() + ")");
        }
        if (topology == Topology.MESH && n > DeviceMatrix.MAX_MESH_RANKS) {
            throw new ConfigException("a JACCL mesh supports at most " + DeviceMatrix.MAX_MESH_RANKS + " ranks, the device file "
                    + matrix.source() + " has " + n + (ringProblem.isEmpty()
                    ? "; set MLX_JACCL_RING=1 (jdist launch --backend jaccl-ring) to use the ring instead" : ""));
        }
        if (topology == Topology.RING && matrix.ringWires() > DeviceMatrix.MAX_RING_WIRES) {
            throw new ConfigException("a JACCL ring supports at most " + DeviceMatrix.MAX_RING_WIRES
                    + " devices per direction, item [0][1] of " + matrix.source() + " lists " + matrix.ringWires());
        }
        return Optional.of(new JacclConfig(rank, matrix, topology, coordinator, parseTimeout(env.get("JDIST_TIMEOUT")),
                parseQpMode(env.get("JDIST_JACCL_QP")),
                blankToNull(env.get("JDIST_JACCL_LIB")) == null ? Verbs.defaultLibrary() : env.get("JDIST_JACCL_LIB").trim(),
                parseGidIndex(env.get("JDIST_JACCL_GID_INDEX"))));
    }

    private static Optional<JacclConfig> notConfigured(boolean strict, String why) {
        if (strict) throw new ConfigException("the 'jaccl' backend is not configured: " + why);
        return Optional.empty();
    }

    /** {name, value}: the first of the names that is set (non-blank), else {first name, null}. */
    private static String[] lookup(Map<String, String> env, String primary, String fallback) {
        if (blankToNull(env.get(primary)) != null) return new String[]{primary, env.get(primary)};
        if (blankToNull(env.get(fallback)) != null) return new String[]{fallback, env.get(fallback)};
        return new String[]{fallback, null};
    }

    private static String seen(String[] var) {
        return var[0] + (var[1] == null ? " unset" : "=" + var[1]);
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }

    /** Strict decimal rank (MLX uses atoi; jdist refuses what atoi would silently turn into 0). */
    public static int parseRank(String variable, String value) {
        String v = value.trim();
        if (!v.matches("[0-9]{1,9}")) {
            throw new ConfigException(variable + "='" + value + "' is not a rank; it must be a non-negative decimal integer such as 0 or 3");
        }
        return Integer.parseInt(v);
    }

    /** {@code host:port} or {@code [v6]:port}; ConfigException naming the variable otherwise. */
    public static String[] splitHostPort(String value, String variable) {
        String v = value.trim();
        int colon = v.lastIndexOf(':');
        String host = colon < 0 ? "" : v.substring(0, colon);
        String port = colon < 0 ? "" : v.substring(colon + 1);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        boolean ok = !host.isEmpty() && port.matches("[0-9]{1,5}") && Integer.parseInt(port) >= 1 && Integer.parseInt(port) <= 65535;
        if (!ok) {
            throw new ConfigException(variable + "='" + value + "' is not an address; expected ip:port with a port in"
                    + " 1..65535, e.g. 10.0.0.1:32323 (rank 0's address and the port it listens on)");
        }
        return new String[]{host, port};
    }

    /** JDIST_TIMEOUT, as every backend reads it ({@link JdistTimeout}). */
    public static Duration parseTimeout(String value) {
        return JdistTimeout.parse(value);
    }

    public static QpMode parseQpMode(String value) {
        if (blankToNull(value) == null) return QpMode.UC;
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "uc" -> QpMode.UC;
            case "rc" -> QpMode.RC;
            default -> throw new ConfigException("JDIST_JACCL_QP='" + value + "' is not a queue-pair type; use uc"
                    + " (the default, like MLX) or rc (reliable connected; use it with soft-RoCE)");
        };
    }

    static OptionalInt parseGidIndex(String value) {
        if (blankToNull(value) == null) return OptionalInt.empty();
        if (!value.trim().matches("[0-9]{1,4}")) {
            throw new ConfigException("JDIST_JACCL_GID_INDEX='" + value + "' is not a GID index; use a non-negative"
                    + " integer from the GID table shown by `ibv_devinfo -v`, or unset it to use the first IPv4-mapped GID");
        }
        return OptionalInt.of(Integer.parseInt(value.trim()));
    }
}
