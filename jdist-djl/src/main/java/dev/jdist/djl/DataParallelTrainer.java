package dev.jdist.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingConfig;
import ai.djl.util.Pair;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

import java.util.ArrayList;
import java.util.List;

/**
 * A DJL {@link Trainer} that trains one model data-parallel over a jdist {@link Group} (docs/djl.md): construct it
 * instead of {@code model.newTrainer(config)}, and everything else — {@code EasyTrain.fit}, a hand-written loop,
 * listeners, evaluators — stays as it was.
 *
 * <ul>
 *   <li>{@link #initialize} gives every rank rank 0's initial parameters (one broadcast per bucket);</li>
 *   <li>{@link #step} first replaces each gradient by its average over the group (a few bucketed all-reduces, see
 *       {@link GradientBuckets}), then lets DJL's own parameter server run the optimizer. Every rank applies the same
 *       averaged gradient to the same parameters, so the replicas stay bit-identical.</li>
 * </ul>
 *
 * <p>Parameters are taken in the order of {@code model.getBlock().getParameters()}, which is the same on every rank
 * (DJL's parameter store keys them by random ids). A failed collective — a rank died, a deadline passed — is thrown
 * from {@code step()} as jdist's typed {@code DistributedException}, and so out of {@code EasyTrain.fit}.
 * On a group of one, nothing is communicated: the run is plain DJL's, bit for bit.
 */
public class DataParallelTrainer extends Trainer {
    private final Group group;
    private final GradientBuckets buckets;
    private long averagingNanos;

    /** Data-parallel over {@link Distributed#init()}'s group, float32 on the wire, 32 MiB buckets. */
    public DataParallelTrainer(Model model, TrainingConfig config) {
        this(model, config, Distributed.init());
    }

    /** Data-parallel over {@code group}, float32 on the wire, 32 MiB buckets. */
    public DataParallelTrainer(Model model, TrainingConfig config, Group group) {
        this(model, config, group, GradientBuckets.DEFAULT_BUCKET_BYTES, null);
    }

    /**
     * @param bucketBytes gradients are averaged in buckets of about this many float32 bytes ({@code <= 0}: one
     *        all-reduce per parameter)
     * @param communicationType {@code null} for exact float32, or {@link DType#BFLOAT16} / {@link DType#FLOAT16}
     *        (MLX's {@code communication_type}): half the bytes on the wire, rounded gradients
     */
    public DataParallelTrainer(Model model, TrainingConfig config, Group group, long bucketBytes, DType communicationType) {
        super(model, config);
        if (group == null) throw new IllegalArgumentException("DataParallelTrainer needs a group, got null");
        if (getDevices().length != 1) {
            throw new IllegalArgumentException("DataParallelTrainer trains on one device per rank; the config names "
                    + getDevices().length + " devices: start one rank per device instead");
        }
        this.group = group;
        this.buckets = new GradientBuckets(group, bucketBytes, communicationType);
    }

    /** The group the gradients are averaged over. */
    public Group group() { return group; }

    /**
     * Wall time spent averaging gradients so far: packing, the all-reduces and unpacking (what a step spends on
     * communication; DJL's backward pass is one engine call, so none of it overlaps the backward pass).
     */
    public long averagingNanos() { return averagingNanos; }

    /** Collectives issued so far (the initial broadcast and every step's all-reduces). */
    public int collectives() { return buckets.collectives(); }

    @Override
    public void initialize(Shape... shapes) {
        super.initialize(shapes);
        broadcastParameters();
    }

    /** Gives every rank rank 0's parameters (done by {@link #initialize}; call it after loading weights yourself). */
    public void broadcastParameters() {
        List<NDArray> values = new ArrayList<>();
        for (Parameter p : parameters()) values.add(p.getArray());
        buckets.broadcastFromRank0(values);
    }

    @Override
    public void step() {
        if (group.size() > 1) {
            List<NDArray> grads = new ArrayList<>();
            try {
                for (Parameter p : parameters()) {
                    if (p.requiresGradient()) grads.add(p.getArray().getGradient());
                }
                long begin = System.nanoTime();
                buckets.average(grads);
                averagingNanos += System.nanoTime() - begin;
            } finally {
                for (NDArray g : grads) g.close();
            }
        }
        super.step();
    }

    private List<Parameter> parameters() {
        List<Parameter> out = new ArrayList<>();
        for (Pair<String, Parameter> p : getModel().getBlock().getParameters()) out.add(p.getValue());
        return out;
    }

    @Override
    public void close() {
        buckets.close();
        super.close();
    }
}
