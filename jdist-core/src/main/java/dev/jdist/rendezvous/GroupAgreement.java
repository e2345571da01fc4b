package dev.jdist.rendezvous;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.JobToken;
import dev.jdist.spi.RankOffer;
import dev.jdist.spi.RankRecord;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The agreement check of a group formed from the backends' own variables (a hostfile, NCCL's or JACCL's variables, an
 * MPI launcher) when {@code JDIST_JOB_TOKEN} is set. A job token means every rank is jdist ({@code jdist launch} sets
 * one per job unless {@code --mlx-compatible}; on the ring the authentication handshake proves it per connection), so
 * the ranks all-gather their records over the group just formed, before the first user operation, and every rank
 * judges the same table. Without a token MLX peers may be present and nothing is sent: no check.
 */
public final class GroupAgreement {
    private static final ObjectMapper JSON = new ObjectMapper();

    private GroupAgreement() {}

    /**
     * Runs the check over {@code group} ({@code backend}'s, formed from {@code env}'s variables): returns the table, or
     * throws the one error every rank raises. Does not close the group.
     */
    public static JobTable check(GroupImpl group, String backend, Map<String, String> env) {
        String token = JobToken.in(env);
        Described d = describe(group, backend, env);
        RankRecord mine = Rendezvous.record(group.rank(), d.rankSource, group.size(), d.sizeSource, "mlx-variables",
                new RankOffer(backend, d.settings, d.ports, List.of()), token, d.digest, d.description, d.host);
        byte[] json = RecordCodec.encode(mine);
        int n = group.size();
        byte[] lengths = allGather(group, ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(json.length).array());
        int max = 0;
        int[] len = new int[n];
        ByteBuffer b = ByteBuffer.wrap(lengths).order(ByteOrder.LITTLE_ENDIAN);
        for (int q = 0; q < n; q++) {
            len[q] = b.getInt();
            if (len[q] < 0 || len[q] > (1 << 20)) {
                throw new ConfigException("the agreement check over the " + backend + " group received a record length of " + len[q]
                        + " from rank " + q + ": that rank is not a jdist process of this job (a JDIST_JOB_TOKEN job must "
                        + "have only jdist ranks; start MLX programs with `jdist launch --mlx-compatible`)");
            }
            max = Math.max(max, len[q]);
        }
        byte[] all = allGather(group, Arrays.copyOf(json, max));
        List<RankRecord> table = new ArrayList<>(n);
        for (int q = 0; q < n; q++) {
            table.add(RecordCodec.decode(Arrays.copyOfRange(all, q * max, q * max + len[q]), "record from rank " + q));
        }
        var error = Agreement.judgeTable(table, "the " + backend + " group");
        if (error.isPresent()) throw new ConfigException(error.get());
        return new JobTable("mlx-variables", table, null);
    }

    private static byte[] allGather(GroupImpl group, byte[] mine) {
        Array in = Array.fromBytes(DType.UINT8, mine, mine.length);
        Array out = Array.zeros(DType.UINT8, mine.length * group.size());
        if (mine.length > 0) group.allGather(in, out);
        return out.toBytes();
    }

    private record Described(String rankSource, String sizeSource, String digest, String description,
                             Map<String, String> settings, String host, List<Integer> ports) {}

    /** What the backend's variables say about the job, for the record. */
    private static Described describe(GroupImpl group, String backend, Map<String, String> env) {
        String host = hostOf(env);
        switch (backend) {
            case "ring" -> {
                String file = env.get("MLX_HOSTFILE");
                RingHostfile hf = RingHostfile.read(Path.of(file));
                List<RingHostfile.Address> own = hf.addresses(group.rank());
                List<Integer> ports = own.stream().map(RingHostfile.Address::port).toList();
                Map<String, String> settings = new LinkedHashMap<>();
                settings.put("JDIST_TRANSPORT", env.getOrDefault("JDIST_TRANSPORT", "").isBlank() ? "tcp"
                        : env.get("JDIST_TRANSPORT").strip().toLowerCase(java.util.Locale.ROOT));
                String canonical = canonical(hf);
                return new Described("MLX_RANK", "MLX_HOSTFILE's entries", LocalFacts.sha256Hex(canonical.getBytes(StandardCharsets.UTF_8)),
                        "hostfile " + file, settings, own.getFirst().socketAddress().getAddress().getHostAddress(), ports);
            }
            case "jaccl" -> {
                String devices = env.getOrDefault("MLX_IBV_DEVICES", "");
                String coordinator = env.getOrDefault("MLX_JACCL_COORDINATOR", env.getOrDefault("JACCL_COORDINATOR", ""));
                String text = "coordinator " + coordinator + "\n" + canonicalFile(devices);
                return new Described("MLX_RANK", "MLX_IBV_DEVICES's entries", LocalFacts.sha256Hex(text.getBytes(StandardCharsets.UTF_8)),
                        "device file " + devices + " and coordinator " + coordinator, Map.of(), host, List.of());
            }
            case "nccl" -> {
                String text = "NCCL_HOST_IP=" + env.getOrDefault("NCCL_HOST_IP", "") + " NCCL_PORT=" + env.getOrDefault("NCCL_PORT", "");
                return new Described("MLX_RANK", "MLX_WORLD_SIZE", LocalFacts.sha256Hex(text.getBytes(StandardCharsets.UTF_8)), text,
                        Map.of(), host, List.of());
            }
            default -> {
                return new Described("the " + backend + " rank", "the " + backend + " world size", "", "", Map.of(), host, List.of());
            }
        }
    }

    private static String hostOf(Map<String, String> env) {
        InetAddress a = Rendezvous.interfaceAddress(env);
        return (a != null ? a : Rendezvous.firstNetworkAddress()).getHostAddress();
    }

    /** The hostfile as every rank understands it: the address texts, rank by rank (spacing and layout do not count). */
    static String canonical(RingHostfile hf) {
        List<List<String>> texts = new ArrayList<>();
        for (List<RingHostfile.Address> entry : hf.ranks()) texts.add(entry.stream().map(RingHostfile.Address::text).toList());
        try {
            return JSON.writeValueAsString(texts);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String canonicalFile(String path) {
        if (path.isEmpty()) return "";
        try {
            return JSON.writeValueAsString(JSON.readTree(Files.readString(Path.of(path))));
        } catch (IOException e) {
            return "unreadable " + path;
        }
    }
}
