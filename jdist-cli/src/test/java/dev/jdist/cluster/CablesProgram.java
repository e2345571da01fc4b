package dev.jdist.cluster;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.UnsupportedCollectiveException;

/**
 * One rank of {@link RingOfCablesIT}'s job: all_sum, all_gather and sum_scatter at sizes from one element to several
 * ring parts, every value checked; send/recv between neighbours; then a send to a rank two steps away and a broadcast,
 * which need direct connections, must fail with the reason. Prints one line per rank: {@code <rank> ok <checks>} and
 * each refused operation's message, or {@code <rank> WRONG ...}.
 */
public final class CablesProgram {

    private CablesProgram() {
    }

    public static void main(String[] args) {
        Group g = Distributed.init();
        int n = g.size(), r = g.rank();
        StringBuilder out = new StringBuilder();
        int checks = 0;
        for (int count : new int[] {1, 1000, 300_000}) {
            float[] x = new float[count * n];
            for (int i = 0; i < x.length; i++) x[i] = r + 1 + i % 7;
            float[] sum = g.allSum(Array.of(x)).toFloatArray();
            float[] gathered = g.allGather(Array.of(x)).toFloatArray();
            float[] scattered = g.sumScatter(Array.of(x)).toFloatArray();
            for (int i = 0; i < x.length; i++) {
                float want = n * (n + 1) / 2f + n * (i % 7);
                if (sum[i] != want) throw wrong(r, "all_sum of " + x.length + " at " + i + ": " + sum[i] + " != " + want);
            }
            for (int q = 0; q < n; q++) {
                for (int i = 0; i < x.length; i++) {
                    float want = q + 1 + i % 7;
                    if (gathered[q * x.length + i] != want) throw wrong(r, "all_gather of " + x.length + " from rank " + q + " at " + i);
                }
            }
            for (int i = 0; i < count; i++) {
                int at = r * count + i;
                float want = n * (n + 1) / 2f + n * (at % 7);
                if (scattered[i] != want) throw wrong(r, "sum_scatter of " + x.length + " at " + i + ": " + scattered[i] + " != " + want);
            }
            checks += 3;
        }
        int right = (r + 1) % n, left = Math.floorMod(r - 1, n);
        g.send(Array.of((float) r), right);
        float got = g.recv(new int[] {1}, DType.FLOAT32, left).toFloatArray()[0];
        if (got != left) throw wrong(r, "recv from the left neighbour: " + got);
        checks++;
        try {
            g.send(Array.of(1f), (r + 2) % n);
            throw wrong(r, "a send to rank " + (r + 2) % n + " was accepted");
        } catch (IllegalArgumentException e) {
            out.append(" | send: ").append(e.getMessage());
        }
        try {
            g.broadcast(Array.of(1f), 0);
            throw wrong(r, "a broadcast was accepted");
        } catch (UnsupportedCollectiveException e) {
            out.append(" | broadcast: ").append(e.getMessage());
        }
        g.barrier();   // built on all_sum: fine without direct connections
        g.allSum(Array.of(1f));   // and the group still works after the refusals
        System.out.print(r + " ok " + checks + out + "\n");
        g.close();
    }

    private static Error wrong(int rank, String what) {
        System.out.print(rank + " WRONG " + what + "\n");
        return new AssertionError("rank " + rank + ": " + what);
    }
}
