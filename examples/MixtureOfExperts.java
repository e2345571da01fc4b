import dev.jdist.Array;
import dev.jdist.Distributed;
import dev.jdist.Group;

import java.util.Random;

/**
 * Expert parallelism (what MLX's distributed API cannot do: it has no all_to_all): a mixture-of-experts layer of
 * 8 experts (dev.jdist.nn.MixtureOfExperts, top-1 gate, each expert an MLP 32 → 64 → 32) spread over the ranks,
 * 8/n experts per rank. Every rank routes its own 96 tokens; the tokens travel to their expert's rank and back with
 * all_to_all_v. Each rank then runs the same layer alone on the same tokens (all 8 experts in this process) and
 * checks that both outputs agree; it exits 1 when they do not.
 *
 *     jdist launch -n 4 examples/MixtureOfExperts.java
 */
public class MixtureOfExperts {
    static final int EXPERTS = 8;       // divides among 1, 2, 4, 8 ranks
    static final int DIM = 32;
    static final int HIDDEN = 64;
    static final int TOKENS = 96;       // per rank
    static final float TOLERANCE = 1e-5f;

    public static void main(String[] args) {
        Group world = Distributed.init();
        int n = world.size();
        int rank = world.rank();
        if (EXPERTS % n != 0) {
            System.err.println("MixtureOfExperts: " + EXPERTS + " experts do not divide among " + n
                    + " ranks; run with a rank count that divides " + EXPERTS);
            System.exit(2);
        }

        // The same layer on every rank; this rank's own tokens.
        var moe = dev.jdist.nn.MixtureOfExperts.random(DIM, HIDDEN, EXPERTS, new Random(0));
        Random data = new Random(100 + rank);
        float[] xv = new float[TOKENS * DIM];
        for (int i = 0; i < xv.length; i++) xv[i] = (float) data.nextGaussian();
        Array x = Array.fromFloats(xv, TOKENS, DIM);

        // Expert-parallel forward (tokens out and back with all_to_all_v), then the same layer in this process alone.
        long start = System.nanoTime();
        float[] y = moe.forward(x, world).toFloatArray();
        double ms = (System.nanoTime() - start) / 1e6;
        float[] expected = moe.forward(x).toFloatArray();

        float maxError = 0;
        for (int i = 0; i < y.length; i++) maxError = Math.max(maxError, Math.abs(y[i] - expected[i]));
        int[] perExpert = new int[EXPERTS];
        for (int e : moe.route(x).expert()) perExpert[e]++;
        int away = 0;
        for (int e = 0; e < EXPERTS; e++) if (e / (EXPERTS / n) != rank) away += perExpert[e];
        boolean ok = maxError <= TOLERANCE;
        System.out.printf("rank %d of %d: experts %d-%d, %d of %d tokens to other ranks, max |y - single process| = %.3g%s%n",
                rank, n, rank * (EXPERTS / n), (rank + 1) * (EXPERTS / n) - 1, away, TOKENS, maxError, ok ? "" : " MISMATCH");

        // Every rank learns whether all matched (a rank that exited early would leave the others waiting).
        int mismatches = world.allSum(Array.of(ok ? 0 : 1)).toIntArray()[0];
        int[] routed = world.allSum(Array.fromInts(perExpert, EXPERTS)).toIntArray();
        if (rank == 0) {
            System.out.printf("tokens per expert over all ranks: %s; %d ranks x %d tokens; forward %.1f ms%n",
                    java.util.Arrays.toString(routed), n, TOKENS, ms);
            if (mismatches == 0) System.out.printf("expert-parallel output equals the single-process output on all %d ranks%n", n);
        }
        if (mismatches != 0) {
            System.err.printf("rank %d: %d rank(s) differ from the single-process output by more than %.0e%n", rank, mismatches,
                    TOLERANCE);
            System.exit(1);
        }
    }
}
