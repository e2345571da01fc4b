package dev.jdist.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.algo.AlgorithmRules;
import dev.jdist.bench.BenchOp;
import dev.jdist.bench.BenchPlot;
import dev.jdist.bench.BenchResult;
import dev.jdist.bench.BenchRunner;
import dev.jdist.bench.BenchTable;
import dev.jdist.bench.BenchWorker;
import dev.jdist.bench.SizeSweep;
import dev.jdist.bench.Tuner;
import dev.jdist.console.CliFailure;
import dev.jdist.launch.JobTargetOptions;
import dev.jdist.launch.RankOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jdist bench}: an nccl-tests-style sweep of collectives, run as a real job through {@code jdist launch}. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Measure collectives: latency (median, p99), algorithm and bus bandwidth, with results checked.",
                "Example: jdist bench -n 2 --op all_sum,all_gather --sizes 4B:256MiB --plot ring.png"})
public final class BenchCommand implements Callable<Integer> {

    /** Where the ranks run: launch's options, two ranks per host by default. */
    @Mixin
    JobTargetOptions target = JobTargetOptions.withRanksPerHost(2);

    /** --env and --bind-to, as for launch. */
    @Mixin
    RankOptions ranks = new RankOptions();

    @Option(names = "--op", split = ",",
            description = {"ops: all_sum, all_max, all_min, all_gather, sum_scatter, send_recv, broadcast, all_to_all (comma-separated; default all_sum,",
                    "with --tune all_sum,all_gather,sum_scatter)"})
    List<String> ops;

    @Option(names = "--sizes", defaultValue = "4B:64MiB", description = "MIN:MAX message sizes, e.g. 4B:1GiB (default ${DEFAULT-VALUE})")
    String sizes;

    @Option(names = {"-f", "--factor"}, defaultValue = "2", description = "size multiplier between rows (default ${DEFAULT-VALUE})")
    int factor;

    @Option(names = {"-d", "--dtype"}, defaultValue = "float32", description = "element type (default ${DEFAULT-VALUE})")
    String dtype;

    @Option(names = {"-w", "--warmup"}, defaultValue = "5", description = "untimed iterations per row (default ${DEFAULT-VALUE})")
    int warmup;

    @Option(names = "--jit-warmup", defaultValue = BenchWorker.DEFAULT_WARMUP_SECONDS, paramLabel = "SECONDS",
            description = {"before each op's first row, untimed calls for at least this long on every rank, so that the JIT",
                    "has compiled its paths (default ${DEFAULT-VALUE}; 0: a fixed 3000 small and 100 medium calls only)"})
    double jitWarmup;

    @Option(names = {"-i", "--iters"}, defaultValue = "20", description = "timed iterations per row (default ${DEFAULT-VALUE})")
    int iters;

    @Option(names = "--mode", defaultValue = "out-of-place",
            description = {"out-of-place (into a preallocated output), in-place, returned (each call returns a new array:",
                    "allSum(x), allGather(x)...: the API's default path, allocation included), both (the first two) or all",
                    "(default ${DEFAULT-VALUE})"})
    String mode;

    @Option(names = "--csv", description = "print CSV instead of the table")
    boolean csv;

    @Option(names = "--json", description = "print JSON instead of the table")
    boolean json;

    @Option(names = "--plot", description = "also draw busbw and latency against size into this .png or .svg file")
    Path plot;

    @Option(names = "--tune", paramLabel = "FILE",
            description = {"measure every algorithm of each op at each size (ring backend, between jdist ranks) and write",
                    "the crossover points as rules to FILE, which jobs read from JDIST_ALGO_RULES=FILE; rules FILE",
                    "already holds for other rank counts are kept"})
    Path tune;

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        PrintStream err = System.err;
        // the numbers and --bind-to are checked here; the hosts and the backend by the job's launcher
        target.repeat();
        target.connectionsPerIp();
        target.startingPort();
        ranks.bindToCore();
        BenchWorker.Spec spec;
        try {
            spec = spec();
        } catch (IllegalArgumentException e) {
            throw CliFailure.usage(e.getMessage());
        }
        List<String> launch = new ArrayList<>(target.asLaunchArguments());
        launch.addAll(ranks.asLaunchArguments());

        AlgorithmRules existing = tune != null && Files.exists(tune) ? readRules(tune) : null;
        int total = spec.ops().size() * spec.sizes().size() * spec.modes().size() * (tune != null ? 3 : 1);
        ProgressBar progress = new ProgressBar(total, err);
        List<BenchResult> results;
        try {
            results = BenchRunner.run(launch, spec, progress::advance, err);
        } finally {
            progress.clear();
        }
        if (json) {
            out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(results));
        } else if (csv) {
            out.print(BenchTable.csv(results));
        } else {
            out.print(BenchTable.text(results));
        }
        if (plot != null) {
            String title = "jdist bench: " + (results.isEmpty() ? "" : results.getFirst().ranks() + " ranks, ")
                    + spec.dtype() + ", " + (target.backend == null ? "default backend" : target.backend)
                    + (ranks.env.isEmpty() ? "" : ", " + String.join(" ", ranks.env))
                    + (ranks.bindTo == null ? "" : ", --bind-to " + ranks.bindTo)
                    + ", " + LocalDate.now();
            BenchPlot.write(results, title, plot);
            err.println("jdist bench: plot written to " + plot.toAbsolutePath());
        }
        long wrong = results.stream().mapToLong(BenchResult::wrong).sum();
        if (wrong > 0) {
            throw CliFailure.of(1, wrong + " wrong elements: the collectives returned incorrect results");
        }
        if (tune != null) writeRules(results, existing, spec, err);
        return 0;
    }

    private static AlgorithmRules readRules(Path file) {
        try {
            return AlgorithmRules.read(file);
        } catch (ConfigException e) {
            throw CliFailure.usage("--tune " + file + " exists but is not a rules file this jdist can extend (" + e.getMessage()
                    + "); choose another file or remove it");
        }
    }

    /** The crossovers the tune rows say, merged into {@code existing}, written to {@link #tune}. */
    private void writeRules(List<BenchResult> results, AlgorithmRules existing, BenchWorker.Spec spec, PrintStream err)
            throws java.io.IOException {
        List<AlgorithmRules.Rule> fresh = Tuner.rules(results);
        if (fresh.isEmpty()) throw CliFailure.of(1, "--tune: the job measured nothing to choose between; no rules written");
        BenchResult first = results.getFirst();
        String comment = "measured by jdist bench --tune on " + LocalDate.now() + ": " + first.ranks() + " ranks on "
                + (first.hosts() == 0 ? "?" : first.hosts()) + " host(s), " + spec.dtype() + ", sizes "
                + SizeSweep.format(spec.sizes().getFirst()) + " to " + SizeSweep.format(spec.sizes().getLast());
        AlgorithmRules merged = Tuner.merge(existing, fresh, comment);
        Files.writeString(tune, merged.toJson());
        for (AlgorithmRules.Rule r : fresh) {
            err.println("jdist bench: " + r.op() + " on " + r.minRanks() + " ranks, " + SizeSweep.format(r.minBytes()) + " to "
                    + SizeSweep.format(r.maxBytes()) + ": " + r.algorithm());
        }
        err.println("jdist bench: wrote " + merged.rules().size() + " rule(s) to " + tune.toAbsolutePath() + "; jobs use them with "
                + "JDIST_ALGO_RULES=" + tune.toAbsolutePath() + " (the same file on every host)");
    }

    BenchWorker.Spec spec() {
        List<String> opNames = new ArrayList<>();
        List<String> asked = ops != null ? ops : tune != null ? List.of("all_sum", "all_gather", "sum_scatter") : List.of("all_sum");
        for (String o : asked) opNames.add(BenchOp.parse(o).cliName());
        if (tune != null) {
            if (opNames.contains("send_recv")) throw new IllegalArgumentException("--tune: send_recv has no algorithms to choose between");
            if (!mode.equals(BenchWorker.OUT_OF_PLACE)) throw new IllegalArgumentException("--tune measures out-of-place only; drop --mode");
            if (tune.getParent() != null && !Files.isDirectory(tune.getParent())) {
                throw new IllegalArgumentException("--tune: directory " + tune.getParent() + " does not exist");
            }
        }
        DType.fromMlxName(dtype);
        if (iters < 1) throw new IllegalArgumentException("--iters must be at least 1, got " + iters);
        if (warmup < 0) throw new IllegalArgumentException("--warmup must be >= 0, got " + warmup);
        if (!(jitWarmup >= 0 && jitWarmup <= 600)) throw new IllegalArgumentException("--jit-warmup takes 0 to 600 seconds, got " + jitWarmup);
        List<String> modes = switch (mode) {
            case "both" -> List.of(BenchWorker.OUT_OF_PLACE, BenchWorker.IN_PLACE);
            case "all" -> BenchWorker.MODES;
            default -> {
                if (!BenchWorker.MODES.contains(mode)) {
                    throw new IllegalArgumentException("--mode must be out-of-place, in-place, returned, both or all, got '" + mode + "'");
                }
                yield List.of(mode);
            }
        };
        if (plot != null && plot.getParent() != null && !Files.isDirectory(plot.getParent())) {
            throw new IllegalArgumentException("--plot: directory " + plot.getParent() + " does not exist");
        }
        List<Long> sweep;
        try {
            sweep = SizeSweep.parse(sizes, factor);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--sizes/--factor: " + e.getMessage(), e);
        }
        return new BenchWorker.Spec(opNames, sweep, dtype, warmup, iters, modes, tune != null, jitWarmup);
    }

    /** A one-line progress bar on stderr, only when stderr is a terminal. */
    private static final class ProgressBar {
        private final int total;
        private final PrintStream err;
        private final boolean enabled = System.console() != null && System.console().isTerminal();
        private int done;

        ProgressBar(int total, PrintStream err) {
            this.total = total;
            this.err = err;
        }

        void advance(BenchResult row) {
            done++;
            if (!enabled) return;
            int width = 30;
            int filled = total == 0 ? width : done * width / total;
            err.print("\r[" + "#".repeat(filled) + " ".repeat(width - filled) + "] " + done + "/" + total + "  "
                    + row.op() + " " + SizeSweep.format(row.bytes()) + "   ");
            err.flush();
        }

        void clear() {
            if (enabled && done > 0) err.print("\r" + " ".repeat(80) + "\r");
        }
    }
}
