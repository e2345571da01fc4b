package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.Group;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A mixture-of-experts layer with top-1 routing (as in Switch Transformers), over float32 tokens of {@code dim}
 * features: a gate {@code [experts, dim]} scores every token, the token goes to its highest-scoring expert (a
 * feed-forward block {@code dim → hidden → dim} with ReLU), and the expert's output is scaled by the gate's softmax
 * probability for that expert.
 *
 * <p>{@link #forward(Array)} runs every expert in this process. {@link #forward(Array, Group)} runs it expert-parallel:
 * rank r of the group computes experts {@code [r·E/n, (r+1)·E/n)} only, and each rank's tokens travel to their
 * expert's rank and back with {@link Group#allToAllV}; the result equals the single-process one up to float rounding
 * (each token sees the same arithmetic, only the batches an expert runs on differ). Every rank builds the whole layer
 * (the same seed), which keeps the example short; a model too large for that would build only its own experts.
 */
public final class MixtureOfExperts {
    /** One expert: {@code down(relu(up(x)))}. */
    public record Expert(Linear up, Linear down) {
        public Expert {
            if (up.outputDims() != down.inputDims() || up.inputDims() != down.outputDims()) {
                throw new IllegalArgumentException("an expert maps dim → hidden → dim; got " + up + " then " + down);
            }
        }

        public Array forward(Array x) { return down.forward(Activations.relu(up.forward(x))); }
    }

    /** Where each token goes: its expert and the gate probability its output is scaled by. */
    public record Routing(int[] expert, float[] weight) {}

    private final Linear gate;
    private final List<Expert> experts;
    private final int dim;

    /** A layer over {@code gate} ({@code [experts, dim]}, no bias needed) and one expert per gate row. */
    public MixtureOfExperts(Linear gate, List<Expert> experts) {
        if (gate.outputDims() != experts.size()) {
            throw new IllegalArgumentException("the gate scores " + gate.outputDims() + " experts but " + experts.size()
                    + " are given; pass one expert per gate output");
        }
        for (Expert e : experts) {
            if (e.up().inputDims() != gate.inputDims()) {
                throw new IllegalArgumentException("the gate takes " + gate.inputDims() + " features but an expert takes "
                        + e.up().inputDims());
            }
        }
        this.gate = gate;
        this.experts = List.copyOf(experts);
        this.dim = gate.inputDims();
    }

    /** A layer initialised as {@link Linear#random} does, from {@code rng}: the gate, then each expert's two layers. */
    public static MixtureOfExperts random(int dim, int hidden, int experts, Random rng) {
        if (experts < 1) throw new IllegalArgumentException("a mixture needs at least one expert, got " + experts);
        Linear gate = Linear.random(dim, experts, false, rng);
        List<Expert> list = new ArrayList<>(experts);
        for (int e = 0; e < experts; e++) list.add(new Expert(Linear.random(dim, hidden, true, rng), Linear.random(hidden, dim, true, rng)));
        return new MixtureOfExperts(gate, list);
    }

    public int experts() { return experts.size(); }

    public int dim() { return dim; }

    /** The top-1 expert of every row of {@code x} ({@code [tokens, dim]}) and its softmax probability. */
    public Routing route(Array x) {
        int tokens = Floats.rows(x, dim, "MixtureOfExperts input");
        int e = experts.size();
        float[] logits = gate.forward(x, false);
        int[] expert = new int[tokens];
        float[] weight = new float[tokens];
        for (int t = 0; t < tokens; t++) {
            int best = 0;
            for (int j = 1; j < e; j++) if (logits[t * e + j] > logits[t * e + best]) best = j;
            double sum = 0;
            for (int j = 0; j < e; j++) sum += Math.exp(logits[t * e + j] - logits[t * e + best]);
            expert[t] = best;
            weight[t] = (float) (1 / sum);
        }
        return new Routing(expert, weight);
    }

    /** The layer's output for {@code x} ({@code [tokens, dim]}), every expert computed here. */
    public Array forward(Array x) {
        Routing routing = route(x);
        float[] y = runExperts(Floats.read(x, "MixtureOfExperts input"), routing.expert(), 0, experts.size());
        return Floats.array(scale(y, routing.weight()), routing.expert().length, dim);
    }

    /**
     * The layer's output for this rank's tokens {@code x} ({@code [tokens, dim]}), experts spread over {@code group}
     * (a collective: every rank calls it, with any number of tokens, zero included). Three all_to_all_v exchanges: the
     * tokens, sorted by destination rank, and their expert numbers go out (the block sizes announced first with one
     * all_to_all of counts), and the experts' outputs come back in the reverse sizes.
     */
    public Array forward(Array x, Group group) {
        int n = group.size(), e = experts.size();
        if (e % n != 0) {
            throw new IllegalArgumentException(e + " experts do not divide among " + n + " ranks; use a group whose size"
                    + " divides the number of experts");
        }
        int perRank = e / n;
        Routing routing = route(x);
        int tokens = routing.expert().length;
        float[] xs = Floats.read(x, "MixtureOfExperts input");

        // Tokens in order of destination rank (stable: in token order within a rank), with their expert numbers.
        int[] toRank = new int[n];
        for (int t = 0; t < tokens; t++) toRank[routing.expert()[t] / perRank]++;
        int[] next = new int[n];
        for (int q = 1; q < n; q++) next[q] = next[q - 1] + toRank[q - 1];
        int[] slot = new int[tokens];
        float[] sorted = new float[xs.length];
        int[] sortedExpert = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            int s = slot[t] = next[routing.expert()[t] / perRank]++;
            System.arraycopy(xs, t * dim, sorted, s * dim, dim);
            sortedExpert[s] = routing.expert()[t];
        }

        int[] fromRank = group.allToAll(Array.fromInts(toRank, n)).toIntArray();
        Array arrived = group.allToAllV(Floats.array(sorted, tokens, dim), toRank, fromRank);
        int[] arrivedExpert = group.allToAllV(Array.fromInts(sortedExpert, tokens), toRank, fromRank).toIntArray();

        int first = group.rank() * perRank;
        float[] done = runExperts(Floats.read(arrived, "arrived tokens"), arrivedExpert, first, first + perRank);
        float[] back = group.allToAllV(Floats.array(done, arrivedExpert.length, dim), fromRank, toRank).toFloatArray();

        float[] y = new float[xs.length];
        for (int t = 0; t < tokens; t++) System.arraycopy(back, slot[t] * dim, y, t * dim, dim);
        return Floats.array(scale(y, routing.weight()), tokens, dim);
    }

    /** Row t of the result is expert {@code expert[t]} applied to row t of {@code x}; experts from..to-1 only, one batch each. */
    private float[] runExperts(float[] x, int[] expert, int from, int to) {
        for (int k : expert) {
            if (k < from || k >= to) throw new IllegalStateException("a token for expert " + k + " reached the rank of experts "
                    + from + ".." + (to - 1) + "; every rank must build the same layer");
        }
        float[] y = new float[x.length];
        for (int j = from; j < to; j++) {
            int rows = 0;
            for (int k : expert) if (k == j) rows++;
            if (rows == 0) continue;
            float[] batch = new float[rows * dim];
            int[] where = new int[rows];
            for (int t = 0, i = 0; t < expert.length; t++) {
                if (expert[t] != j) continue;
                System.arraycopy(x, t * dim, batch, i * dim, dim);
                where[i++] = t;
            }
            float[] out = Floats.read(experts.get(j).forward(Floats.array(batch, rows, dim)), "expert output");
            for (int i = 0; i < rows; i++) System.arraycopy(out, i * dim, y, where[i] * dim, dim);
        }
        return y;
    }

    private float[] scale(float[] y, float[] weight) {
        for (int t = 0; t < weight.length; t++) for (int i = 0; i < dim; i++) y[t * dim + i] *= weight[t];
        return y;
    }
}
