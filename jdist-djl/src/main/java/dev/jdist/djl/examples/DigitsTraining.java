package dev.jdist.djl.examples;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.BatchSampler;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.djl.DataParallelTrainer;
import dev.jdist.djl.DistributedBatchSampler;
import dev.jdist.djl.GradientBuckets;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.zip.CRC32;

/**
 * The digits example of docs/djl.md: an MLP 64 → 128 → ReLU → 10 trained on the UCI handwritten digits with DJL,
 * data-parallel over {@code Distributed.init()}'s group. The same program runs as one process, under
 * {@code jdist launch -n 4}, under {@code srun} and in a Spark barrier stage. Each rank prints one line with its test
 * accuracy and a CRC-32 of its parameters; {@code --plain} runs the same training with plain DJL (no jdist at all),
 * which the one-rank jdist run equals bit for bit.
 */
@Command(name = "digits", mixinStandardHelpOptions = true,
        description = "Train an MLP on the UCI digits with DJL, data-parallel over jdist's group.")
public final class DigitsTraining implements Callable<Integer> {

    @Option(names = "--data", description = "digits.csv.gz (default: $JDIST_DIGITS, Debian's python3-sklearn copy, /var/cache/jdist)")
    Path data;
    @Option(names = "--epochs", defaultValue = "20", description = "epochs (default: ${DEFAULT-VALUE})")
    int epochs;
    @Option(names = "--batch", defaultValue = "64", description = "global batch; each of n ranks takes batch/n rows a step (default: ${DEFAULT-VALUE})")
    int batch;
    @Option(names = "--learning-rate", defaultValue = "0.1", description = "SGD's learning rate; momentum 0.9 (default: ${DEFAULT-VALUE})")
    float learningRate;
    @Option(names = "--seed", defaultValue = "0", description = "initial parameters and the per-epoch shuffle (default: ${DEFAULT-VALUE})")
    long seed;
    @Option(names = "--split-seed", defaultValue = "42", description = "the train/test split (default: ${DEFAULT-VALUE})")
    long splitSeed;
    @Option(names = "--test-rows", defaultValue = "360", description = "rows held out for testing (default: ${DEFAULT-VALUE})")
    int testRows;
    @Option(names = "--communication-type", description = "bfloat16 or float16 on the wire (default: float32, exact)")
    String communicationType;
    @Option(names = "--plain", description = "plain DJL, no jdist (the reference for the one-rank run)")
    boolean plain;
    @Option(names = "--progress", description = "print a line after every step")
    boolean progress;

    public static void main(String[] args) {
        System.exit(new CommandLine(new DigitsTraining()).execute(args));
    }

    /** The options as the command line gives them (for starters that call {@link #train} themselves, as a Spark task). */
    public static DigitsTraining withOptions(String... args) {
        return CommandLine.populateCommand(new DigitsTraining(), args);
    }

    @Override
    public Integer call() throws IOException, TranslateException {
        Group world = plain ? null : Distributed.init();
        try {
            line(train(world));
            return 0;
        } catch (DistributedException e) {
            line("rank " + world.rank() + " of " + world.size() + ": fit ended with " + e.getClass().getName() + ": " + e.getMessage());
            return 3;
        }
    }

    /**
     * Trains on this rank's shard, data-parallel over {@code world} ({@code null}: plain DJL, no jdist), and returns
     * the rank's result line. A failed collective is thrown as jdist's {@link DistributedException}.
     */
    public String train(Group world) throws IOException, TranslateException {
        Path file = data != null ? data : Digits.locate().orElseThrow(() -> new IllegalArgumentException(
                "digits.csv.gz not found: pass --data, set " + Digits.VARIABLE + ", install python3-sklearn, or run "
                        + "scripts/fetch-digits.sh (as root) to put it at " + Digits.CACHE));
        List<Digits> split = Digits.read(file).split(testRows, splitSeed);
        Digits trainRows = split.get(0), testRows = split.get(1);
        int rank = world == null ? 0 : world.rank(), n = world == null ? 1 : world.size();
        if (batch % n != 0) {
            throw new IllegalArgumentException("--batch " + batch + " does not divide by the " + n + " ranks: pick a multiple of " + n);
        }
        Engine.getInstance().setRandomSeed((int) seed);
        try (NDManager manager = NDManager.newBaseManager(); Model model = Model.newInstance("digits")) {
            Sampler sampling = world == null ? new BatchSampler(new EpochShuffle(seed), batch, false)
                    : new DistributedBatchSampler(world, batch / n, seed);
            RandomAccessDataset train = new ArrayDataset.Builder()
                    .setData(manager.create(trainRows.pixels(), new Shape(trainRows.rows(), Digits.FEATURES)))
                    .optLabels(manager.create(trainRows.labels(), new Shape(trainRows.rows())))
                    .setSampling(sampling)
                    .build();
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(128).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(Digits.CLASSES).build()));
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(learningRate)).optMomentum(0.9f).build());
            if (progress) config.addTrainingListeners(new Progress(rank, n));
            long start = System.nanoTime();
            try (Trainer trainer = world == null ? model.newTrainer(config)
                    : new DataParallelTrainer(model, config, world, GradientBuckets.DEFAULT_BUCKET_BYTES, wireType())) {
                trainer.initialize(new Shape(1, Digits.FEATURES));
                EasyTrain.fit(trainer, epochs, train, null);
                double seconds = (System.nanoTime() - start) / 1e9;
                NDArray x = manager.create(testRows.pixels(), new Shape(testRows.rows(), Digits.FEATURES));
                NDArray predicted = trainer.evaluate(new NDList(x)).singletonOrThrow().argMax(1);
                NDArray truth = manager.create(testRows.labels()).toType(DataType.INT64, false);
                long right = predicted.eq(truth).sum().getLong();
                return String.format("rank %d of %d: test accuracy %.4f (%d of %d), parameters crc32=%08x, %d epochs in %.1f s%s",
                        rank, n, right / (double) testRows.rows(), right, testRows.rows(), crc(model), epochs, seconds,
                        world == null ? ", plain DJL" : "");
            }
        }
    }

    private DType wireType() {
        if (communicationType == null) return null;
        return switch (communicationType) {
            case "bfloat16" -> DType.BFLOAT16;
            case "float16" -> DType.FLOAT16;
            case "float32" -> null;
            default -> throw new IllegalArgumentException("--communication-type must be bfloat16, float16 or float32, got " + communicationType);
        };
    }

    /** CRC-32 of every parameter's bytes, in block order. */
    static long crc(Model model) {
        CRC32 crc = new CRC32();
        for (Parameter p : model.getBlock().getParameters().values()) {
            ByteBuffer b = p.getArray().toByteBuffer();
            crc.update(b);
        }
        return crc.getValue();
    }

    /** One write per line: jdist launch forwards output in chunks, so a line must not be printed in pieces. */
    static void line(String s) {
        PrintStream out = System.out;
        out.print(s + "\n");
        out.flush();
    }

    /** The plain-DJL order: every epoch a shuffle by {@code new Random(seed + epoch)} (what DistributedSampler does on one rank). */
    static final class EpochShuffle implements Sampler.SubSampler {
        private final long seed;
        private int epoch;

        EpochShuffle(long seed) { this.seed = seed; }

        @Override
        public Iterator<Long> sample(RandomAccessDataset dataset) {
            List<Long> all = new ArrayList<>();
            for (long i = 0; i < dataset.size(); i++) all.add(i);
            Collections.shuffle(all, new Random(seed + epoch++));
            return all.iterator();
        }
    }

    /** {@code --progress}: a line after every step, for tests that act mid-epoch. */
    static final class Progress extends TrainingListenerAdapter {
        private final int rank, n;
        private int steps;

        Progress(int rank, int n) { this.rank = rank; this.n = n; }

        @Override
        public void onTrainingBatch(Trainer trainer, TrainingListener.BatchData batchData) {
            line("rank " + rank + " of " + n + ": step " + (++steps));
        }
    }
}
