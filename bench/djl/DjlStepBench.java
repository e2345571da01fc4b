import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.djl.DataParallelTrainer;
import dev.jdist.djl.GradientBuckets;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.Arrays;
import java.util.concurrent.Callable;

/**
 * Step time of data-parallel DJL training over jdist (bench/djl-ddp.sh): an MLP 1024-2048-2048-2048-10 (10.5 M float32
 * parameters) on synthetic input, the same per-rank batch at every rank count. Prints, from rank 0, one CSV line:
 * ranks,mode,params,batch,median_step_ms,p90_step_ms,median_comm_ms,comm_share
 */
@Command(name = "DjlStepBench")
public class DjlStepBench implements Callable<Integer> {
    @Option(names = "--plain", description = "plain DJL trainer, no jdist") boolean plain;
    @Option(names = "--steps", defaultValue = "20") int steps;
    @Option(names = "--warmup", defaultValue = "3") int warmup;
    @Option(names = "--batch", defaultValue = "32") int batch;
    @Option(names = "--communication-type") String communicationType;
    @Option(names = "--bucket-mib", defaultValue = "32") long bucketMib;

    public static void main(String[] args) { System.exit(new CommandLine(new DjlStepBench()).execute(args)); }

    @Override
    public Integer call() {
        Group world = plain ? null : Distributed.init();
        int rank = world == null ? 0 : world.rank(), n = world == null ? 1 : world.size();
        Engine.getInstance().setRandomSeed(1);
        try (Model model = Model.newInstance("bench"); NDManager m = NDManager.newBaseManager()) {
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(2048).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(2048).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(2048).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(10).build()));
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.01f)).build());
            DType wire = communicationType == null ? null : DType.fromMlxName(communicationType);
            try (Trainer t = world == null ? model.newTrainer(config)
                    : new DataParallelTrainer(model, config, world, bucketMib << 20, wire)) {
                t.initialize(new Shape(batch, 1024));
                long params = model.getBlock().getParameters().values().stream().mapToLong(p -> p.getArray().size()).sum();
                NDArray x = m.randomNormal(new Shape(batch, 1024));
                NDArray y = m.randomInteger(0, 10, new Shape(batch), ai.djl.ndarray.types.DataType.FLOAT32);
                double[] step = new double[steps], comm = new double[steps];
                for (int s = -warmup; s < steps; s++) {
                    long c0 = t instanceof DataParallelTrainer d ? d.averagingNanos() : 0;
                    long t0 = System.nanoTime();
                    try (GradientCollector gc = t.newGradientCollector()) {
                        NDArray pred = t.forward(new NDList(x)).singletonOrThrow();
                        gc.backward(t.getLoss().evaluate(new NDList(y), new NDList(pred)));
                    }
                    t.step();
                    long t1 = System.nanoTime();
                    long c1 = t instanceof DataParallelTrainer d ? d.averagingNanos() : 0;
                    if (s >= 0) { step[s] = (t1 - t0) / 1e6; comm[s] = (c1 - c0) / 1e6; }
                }
                double[] sorted = step.clone();
                Arrays.sort(sorted);
                double[] c = comm.clone();
                Arrays.sort(c);
                double med = sorted[steps / 2], p90 = sorted[(int) Math.ceil(steps * 0.9) - 1], cmed = c[steps / 2];
                String mode = (plain ? "plain-djl" : "jdist") + (communicationType == null ? "" : "-" + communicationType);
                String line = String.format("%d,%s,%d,%d,%.1f,%.1f,%.1f,%.2f", n, mode, params, batch, med, p90, cmed, cmed / med);
                System.err.print("rank " + rank + ": " + line + "\n");
                if (rank == 0) System.out.print(line + "\n");
            }
        }
        return 0;
    }
}
