package dev.jdist.algo;

import java.util.ArrayList;
import java.util.List;

import static dev.jdist.algo.MeshSchedule.Buffer.SCRATCH;
import static dev.jdist.algo.MeshSchedule.Buffer.WORK;

/**
 * The hierarchical algorithms (docs/reference/collectives.md §10.11): for members that share hosts, the messages between members
 * of one host (which the mesh moves through shared memory) are kept apart from those between hosts (the network), and
 * the network carries each byte once per host instead of once per member.
 *
 * <p>Every operation has three phases over a {@link HostLayout} with {@code S} <em>stripes</em> ({@code S} = the fewest
 * members any host has for {@link Algorithm#HIER}, 1 for {@link Algorithm#HIER_LEADER}); the member with local index
 * {@code j < S} of each host owns stripe {@code j}, and the owners of one stripe, one per host, talk over the network:
 * <ol>
 *   <li><b>inside each host</b>: the members hand each stripe to its owner (all-reduce: slice j of the vector, combined
 *       by the owner in local order; all-gather: every member's block to every other member; sum_scatter: the chunks of
 *       stripe j);</li>
 *   <li><b>between hosts</b>: the owners of stripe j, one per host, complete their stripe (all-reduce: recursive doubling,
 *       or halving and doubling above {@link #INTER_HOST_RD_MAX_BYTES}; all-gather and sum_scatter: a direct exchange,
 *       one message to each other host's owner);</li>
 *   <li><b>inside each host</b>: the owners hand the finished stripes to the other members.</li>
 * </ol>
 * With one host the middle phase is empty; with one member per host the outer phases are.
 */
public final class Hierarchical {
    private Hierarchical() {}

    /** Slices of an all-reduce up to this size go between hosts by recursive doubling, larger ones by halving and doubling. */
    public static final long INTER_HOST_RD_MAX_BYTES = 16 << 10;

    /** The stripes {@code algorithm} runs on {@code layout}: the fewest members of any host, or 1 for the leader variant. */
    public static int stripes(Algorithm algorithm, HostLayout layout) {
        return switch (algorithm) {
            case HIER -> layout.minPerHost();
            case HIER_LEADER -> 1;
            default -> throw new IllegalArgumentException(algorithm + " is not a hierarchical algorithm");
        };
    }

    // ------------------------------------------------------------------ all-reduce

    /**
     * Rank {@code r}'s all_sum/max/min of {@code elements} elements of {@code itemSize} bytes; WORK is the output, starting
     * as this rank's input. The vector is cut into {@code stripes} slices as the ring cuts a part ({@code seg =
     * ceil(E/S)}); the owner of slice j combines its host's members in local order, left to right, the owners combine the
     * host values by §10.4's tree over the hosts, and every member copies the result.
     */
    public static MeshSchedule allReduce(HostLayout h, int r, long elements, int itemSize, int stripes) {
        int g = h.hostOf(r);
        int l = h.localOf(r);
        int[] local = h.members(g);
        int count = local.length;
        int s = checkStripes(h, stripes);
        long seg = Math.ceilDiv(elements, (long) s);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        long mine = l < s ? sliceBytes(l, seg, elements, itemSize) : 0;
        long mineAt = l < s ? sliceFrom(l, seg, elements, itemSize) : 0;
        long slot = seg * itemSize;
        // 1. inside the host: slice j to its owner, who combines the members in local order
        for (int j = 0; j < s; j++) {
            if (j != l) b.send(local[j], WORK, sliceFrom(j, seg, elements, itemSize), sliceBytes(j, seg, elements, itemSize));
        }
        if (mine > 0) {
            for (int i = 0; i < count; i++) if (i != l) b.recv(local[i], SCRATCH, i * slot, mine);
            foldInLocalOrder(b, l, count, WORK, mineAt, slot, 0, mine);
        }
        b.endStep();
        // 2. between hosts: the owners of this slice, one per host
        if (mine > 0 && h.hosts() > 1) {
            int[] owners = new int[h.hosts()];
            for (int q = 0; q < owners.length; q++) owners[q] = h.member(q, l);
            MeshSchedule flat = mine <= INTER_HOST_RD_MAX_BYTES ? RecursiveDoubling.allReduce(g, owners.length, mine)
                    : HalvingDoubling.allReduce(g, owners.length, mine / itemSize, itemSize);
            b.embed(flat, owners, mineAt, 0);
        }
        // 3. inside the host: every owner's slice to every other member
        if (mine > 0) for (int i = 0; i < count; i++) if (i != l) b.send(local[i], WORK, mineAt, mine);
        for (int j = 0; j < s; j++) {
            if (j != l) b.recv(local[j], WORK, sliceFrom(j, seg, elements, itemSize), sliceBytes(j, seg, elements, itemSize));
        }
        return b.build();
    }

    /**
     * Combines, after a step that received member i's values of one range into {@code SCRATCH[i * slot + scratchAt, +bytes)}
     * for every i but {@code own}, those values and {@code into[intoAt, +bytes)} (this member's own, position {@code own})
     * into {@code into}, left to right in index order: {@code op(op(op(v0, v1), v2), ...)}.
     */
    private static void foldInLocalOrder(MeshSchedule.Builder b, int own, int count, MeshSchedule.Buffer into, long intoAt,
                                         long slot, long scratchAt, long bytes) {
        if (own == 0) {
            for (int i = 1; i < count; i++) b.combine(into, intoAt, SCRATCH, i * slot + scratchAt, bytes, false);
            return;
        }
        for (int i = 1; i < own; i++) b.combine(SCRATCH, scratchAt, SCRATCH, i * slot + scratchAt, bytes, false);
        b.combine(into, intoAt, SCRATCH, scratchAt, bytes, true);
        for (int i = own + 1; i < count; i++) b.combine(into, intoAt, SCRATCH, i * slot + scratchAt, bytes, false);
    }

    private static long sliceFrom(int j, long seg, long elements, int itemSize) {
        return Math.min(j * seg, elements) * itemSize;
    }

    private static long sliceBytes(int j, long seg, long elements, int itemSize) {
        return (Math.min((j + 1) * seg, elements) - Math.min(j * seg, elements)) * itemSize;
    }

    private static int checkStripes(HostLayout h, int stripes) {
        if (stripes < 1 || stripes > h.minPerHost()) {
            throw new IllegalArgumentException(stripes + " stripes on hosts of at least " + h.minPerHost() + " member(s)");
        }
        return stripes;
    }

    // ------------------------------------------------------------------ all-gather

    /**
     * Rank {@code r}'s all_gather of {@code bytes} bytes per rank; WORK is the output ({@code n * bytes}) with this rank's
     * block in place. Host g's data is its members' blocks in rank order ({@code count(g) * bytes}); stripe j of it is
     * bytes {@code [j*q, min((j+1)*q, count*bytes))}, {@code q = ceil(count*bytes / S)}.
     */
    public static MeshSchedule allGather(HostLayout h, int r, long bytes, int stripes) {
        int g = h.hostOf(r);
        int l = h.localOf(r);
        int[] local = h.members(g);
        int s = checkStripes(h, stripes);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (bytes == 0) return b.build();
        // 1. inside the host: every member's block to every other member
        for (int i = 0; i < local.length; i++) {
            if (i == l) continue;
            b.send(local[i], WORK, r * bytes, bytes);
            b.recv(local[i], WORK, local[i] * bytes, bytes);
        }
        b.endStep();
        // 2. between hosts: the owner of stripe l sends it to the other hosts' owners and receives theirs
        if (l < s && h.hosts() > 1) {
            for (int q = 0; q < h.hosts(); q++) {
                if (q == g) continue;
                int owner = h.member(q, l);
                for (long[] run : stripeRuns(h, g, l, s, bytes)) b.send(owner, WORK, run[0], run[1]);
                for (long[] run : stripeRuns(h, q, l, s, bytes)) b.recv(owner, WORK, run[0], run[1]);
            }
            b.endStep();
        }
        // 3. inside the host: each owner hands the other hosts' stripes it received to the other members
        for (int i = 0; i < local.length; i++) {
            if (i == l || l >= s) continue;
            for (int q = 0; q < h.hosts(); q++) {
                if (q != g) for (long[] run : stripeRuns(h, q, l, s, bytes)) b.send(local[i], WORK, run[0], run[1]);
            }
        }
        for (int j = 0; j < s; j++) {
            if (j == l) continue;
            for (int q = 0; q < h.hosts(); q++) {
                if (q != g) for (long[] run : stripeRuns(h, q, j, s, bytes)) b.recv(local[j], WORK, run[0], run[1]);
            }
        }
        return b.build();
    }

    /** Stripe j of host g's data as runs {offset, length} of the output, ascending, adjacent blocks merged. */
    static List<long[]> stripeRuns(HostLayout h, int g, int j, int stripes, long bytes) {
        int[] m = h.members(g);
        long total = m.length * bytes;
        long q = Math.ceilDiv(total, (long) stripes);
        long from = Math.min(j * q, total);
        long to = Math.min((j + 1) * q, total);
        List<long[]> runs = new ArrayList<>();
        for (long pos = from; pos < to; ) {
            int k = (int) (pos / bytes);
            long end = Math.min(to, (k + 1) * bytes);
            long at = m[k] * bytes + (pos - k * bytes);
            long[] last = runs.isEmpty() ? null : runs.getLast();
            if (last != null && last[0] + last[1] == at) last[1] += end - pos;
            else runs.add(new long[] {at, end - pos});
            pos = end;
        }
        return runs;
    }

    // ------------------------------------------------------------------ sum_scatter

    /**
     * Rank {@code r}'s sum_scatter of {@code n} chunks of {@code chunkBytes}; WORK is a copy of the input, the result ends
     * in chunk r. Chunk c belongs to stripe {@code local(c) mod S}: inside each host the stripe's owner combines its
     * members' values of those chunks in local order; between hosts the owners of a stripe send each chunk to the owner
     * on the chunk's host, which combines the hosts' values in host order; the owner then hands chunk c to rank c.
     */
    public static MeshSchedule sumScatter(HostLayout h, int r, long chunkBytes, int stripes) {
        int g = h.hostOf(r);
        int l = h.localOf(r);
        int[] local = h.members(g);
        int s = checkStripes(h, stripes);
        MeshSchedule.Builder b = new MeshSchedule.Builder();
        if (chunkBytes == 0) return b.build();
        // 1. inside the host: the chunks of stripe i to its owner, local member i
        for (int i = 0; i < s; i++) {
            if (i == l) continue;
            for (long[] run : chunkRuns(stripeChunks(h, i, s, -1), chunkBytes)) b.send(local[i], WORK, run[0], run[1]);
        }
        if (l < s) {
            List<Integer> mineChunks = stripeChunks(h, l, s, -1);
            long slot = mineChunks.size() * chunkBytes;
            for (int i = 0; i < local.length; i++) {
                if (i == l) continue;
                long at = i * slot;
                for (long[] run : chunkRuns(mineChunks, chunkBytes)) {
                    b.recv(local[i], SCRATCH, at, run[1]);
                    at += run[1];
                }
            }
            long packed = 0;
            for (long[] run : chunkRuns(mineChunks, chunkBytes)) {
                foldInLocalOrder(b, l, local.length, WORK, run[0], slot, packed, run[1]);
                packed += run[1];
            }
        }
        b.endStep();
        // 2. between hosts: each chunk of this stripe to the owner on the chunk's host, combined there in host order
        if (l < s && h.hosts() > 1) {
            List<Integer> here = stripeChunks(h, l, s, g);
            long slot = here.size() * chunkBytes;
            for (int q = 0; q < h.hosts(); q++) {
                if (q == g) continue;
                int owner = h.member(q, l);
                for (long[] run : chunkRuns(stripeChunks(h, l, s, q), chunkBytes)) b.send(owner, WORK, run[0], run[1]);
                long at = q * slot;
                for (long[] run : chunkRuns(here, chunkBytes)) {
                    b.recv(owner, SCRATCH, at, run[1]);
                    at += run[1];
                }
            }
            long packed = 0;
            for (long[] run : chunkRuns(here, chunkBytes)) {
                foldInLocalOrder(b, g, h.hosts(), WORK, run[0], slot, packed, run[1]);
                packed += run[1];
            }
            b.endStep();
        }
        // 3. inside the host: the owner hands chunk c to rank c
        if (l < s) {
            for (int c : stripeChunks(h, l, s, g)) if (c != r) b.send(c, WORK, c * chunkBytes, chunkBytes);
        } else {
            b.recv(local[l % s], WORK, r * chunkBytes, chunkBytes);
        }
        return b.build();
    }

    /** The chunks of stripe j ({@code local(c) mod S == j}), ascending; only those of host {@code host} unless it is -1. */
    private static List<Integer> stripeChunks(HostLayout h, int j, int stripes, int host) {
        List<Integer> out = new ArrayList<>();
        for (int c = 0; c < h.size(); c++) {
            if (h.localOf(c) % stripes == j && (host < 0 || h.hostOf(c) == host)) out.add(c);
        }
        return out;
    }

    /** Chunks as runs {offset, length} of WORK, adjacent chunks merged. */
    private static List<long[]> chunkRuns(List<Integer> chunks, long chunkBytes) {
        List<long[]> runs = new ArrayList<>();
        for (int c : chunks) {
            long[] last = runs.isEmpty() ? null : runs.getLast();
            if (last != null && last[0] + last[1] == c * chunkBytes) last[1] += chunkBytes;
            else runs.add(new long[] {c * chunkBytes, chunkBytes});
        }
        return runs;
    }
}
