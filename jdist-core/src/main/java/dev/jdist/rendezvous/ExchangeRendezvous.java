package dev.jdist.rendezvous;

import dev.jdist.AllGatherFactory;
import dev.jdist.ConfigException;
import dev.jdist.DistributedException;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.JobToken;
import dev.jdist.spi.RankOffer;
import dev.jdist.spi.RankRecord;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A rendezvous over an all-gather the caller provides (Spark's {@code BarrierTaskContext.allGather}, any embedder's):
 * no store and no master address. Records of any length travel as two all-gathers (the lengths, then the records
 * padded to the longest); every rank judges the same complete table, so every rank raises the same error. The
 * address a rank publishes is {@code JDIST_IFNAME}'s, else its first non-loopback IPv4 address (loopback when all
 * ranks turn out to be on one host is fine; mixed, it is an error naming {@code JDIST_IFNAME}).
 */
public final class ExchangeRendezvous implements RendezvousSession {
    private final int rank;
    private final int size;
    private final AllGatherFactory.AllGather allGather;
    private final Map<String, String> env;
    private final Duration timeout;
    private final String token;
    private final InetAddress address;
    private boolean agreed;
    private JobTable table;

    private ExchangeRendezvous(int rank, int size, AllGatherFactory.AllGather allGather, Map<String, String> env,
                               InetAddress address) {
        this.rank = rank;
        this.size = size;
        this.allGather = allGather;
        this.env = Map.copyOf(env);
        this.timeout = Rendezvous.timeout(env);
        this.token = JobToken.in(env);
        this.address = address;
    }

    static ExchangeRendezvous create(int rank, int size, AllGatherFactory exchange, Map<String, String> env) {
        if (size < 1) throw new IllegalArgumentException("the group size must be at least 1, got " + size);
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " is outside a group of " + size + " (valid ranks 0.." + (size - 1) + ")");
        }
        if (exchange == null) throw new IllegalArgumentException("the all-gather factory must not be null");
        AllGatherFactory.AllGather f = exchange.create(rank, size);
        if (f == null) throw new IllegalArgumentException("the all-gather factory returned null instead of an all-gather function");
        InetAddress a = Rendezvous.interfaceAddress(env);
        if (a == null) a = size == 1 ? InetAddress.getLoopbackAddress() : Rendezvous.firstNetworkAddress();
        return new ExchangeRendezvous(rank, size, f, env, a);
    }

    @Override public Optional<JobTable> table() { return Optional.ofNullable(table); }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    @Override public String description() { return "the caller's all-gather (rank " + rank + " of " + size + ")"; }

    @Override public Map<String, String> env() { return env; }

    @Override public OptionalInt localRank() { return OptionalInt.empty(); }

    @Override public Duration timeout() { return timeout; }

    @Override public InetAddress bindAddress() { return address; }

    @Override
    public JobTable agree(RankOffer offer) {
        if (agreed) throw new IllegalStateException("agree() runs once per rendezvous");
        agreed = true;
        RankRecord mine = Rendezvous.record(rank, "rank", size,
                "size", "exchange", offer, token, "", "", address.getHostAddress());
        List<byte[]> all = gather(RecordCodec.encode(mine));
        List<RankRecord> table = new ArrayList<>(size);
        for (int q = 0; q < size; q++) table.add(RecordCodec.decode(all.get(q), "record from rank " + q + " of the all-gather"));
        var error = Agreement.judgeTable(table, "the all-gather");
        if (error.isPresent()) throw new ConfigException(error.get());
        Agreement.Result reach = Agreement.reachable(table, null);
        if (reach.error() != null) throw new ConfigException(reach.error());
        this.table = new JobTable("exchange", reach.table(), null);
        return this.table;
    }

    /** Nothing to close: the caller owns its all-gather. */
    @Override
    public void close() {}

    @Override
    public List<byte[]> exchange(String tag, byte[] mine) {
        if (!agreed) throw new IllegalStateException("exchange() comes after agree()");
        return gather(mine);
    }

    /** Any lengths: the lengths first, then every rank's bytes padded to the longest. */
    private List<byte[]> gather(byte[] mine) {
        byte[] lengths = call(ByteBuffer.allocate(4).putInt(mine.length).array(), 4);
        int[] len = new int[size];
        int max = 0;
        ByteBuffer b = ByteBuffer.wrap(lengths);
        for (int q = 0; q < size; q++) {
            len[q] = b.getInt();
            if (len[q] < 0 || len[q] > (64 << 20)) {
                throw new DistributedException("the caller's all-gather returned a length of " + len[q] + " for rank " + q
                        + "; it must return every rank's bytes in rank order");
            }
            max = Math.max(max, len[q]);
        }
        byte[] all = call(Arrays.copyOf(mine, max), max);
        List<byte[]> out = new ArrayList<>(size);
        for (int q = 0; q < size; q++) out.add(Arrays.copyOfRange(all, q * max, q * max + len[q]));
        return out;
    }

    private byte[] call(byte[] src, int bytesPerRank) {
        byte[] out = allGather.allGather(src.clone(), bytesPerRank);
        long expected = (long) size * bytesPerRank;
        if (out == null || out.length != expected) {
            throw new DistributedException("the caller's all-gather returned " + (out == null ? "null" : out.length + " bytes")
                    + " for " + bytesPerRank + " bytes from each of " + size + " ranks; it must return exactly " + expected
                    + " bytes (the rank-ordered concatenation)");
        }
        return out;
    }
}
