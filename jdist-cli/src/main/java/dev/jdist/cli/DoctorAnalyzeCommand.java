package dev.jdist.cli;

import dev.jdist.console.CliFailure;
import dev.jdist.flight.FlightAnalysis;
import dev.jdist.flight.FlightDump;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code jdist doctor analyze DIR|FILE...}: the analysis {@code jdist launch} prints for a failed job, for flight
 * records gathered by hand (docs/observability.md, "Reading a failed job").
 */
@Command(name = "analyze", aliases = "analyse", mixinStandardHelpOptions = true,
        description = {"Say where each rank of a job was from their flight records (jdist-flight-*.json): which rank is behind,",
                "which ranks disagree on an operation, which left no record, which failed first and with what.",
                "Gather the records of every host into one directory first (they are in JDIST_DUMP_DIR on each).",
                "Example: jdist doctor analyze /tmp/jdist-job-20261203-101500-3fa9c1"},
        footer = {"Exit status: 0 when records were analysed, 1 when none could be read, 2 for usage errors."})
public final class DoctorAnalyzeCommand implements Callable<Integer> {

    @Parameters(arity = "1..*", paramLabel = "DIR|FILE", description = "directories of records (their jdist-flight-*.json files) or record files")
    List<Path> paths;

    @Option(names = "--ranks", paramLabel = "N", description = "the job's number of ranks, to name those that left no record "
            + "(default: the largest group size recorded)")
    int ranks;

    @Override
    public Integer call() {
        if (ranks < 0) {
            throw CliFailure.usage("--ranks must be a number of ranks (1 or more), got " + ranks);
        }
        List<FlightDump> dumps = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        for (Path p : paths) {
            try {
                if (Files.isDirectory(p)) {
                    FlightDump.Loaded loaded = FlightDump.readDirectory(p);
                    dumps.addAll(loaded.dumps());
                    problems.addAll(loaded.problems());
                    if (loaded.dumps().isEmpty() && loaded.problems().isEmpty()) {
                        problems.add(p + ": no flight records (" + FlightDump.FILE_PREFIX + "*" + FlightDump.FILE_SUFFIX + ") in it");
                    }
                } else if (Files.isRegularFile(p)) {
                    dumps.add(FlightDump.read(p));
                } else {
                    throw CliFailure.usage(p + " does not exist; give the directory of a job's flight records (JDIST_DUMP_DIR) or record files");
                }
            } catch (IllegalArgumentException e) {
                problems.add(e.getMessage());
            } catch (IOException e) {
                problems.add(p + ": cannot read it (" + e.getMessage() + ")");
            }
        }
        FlightAnalysis.analyze(dumps, ranks).forEach(System.out::println);
        System.out.flush();
        problems.forEach(line -> System.err.println("jdist doctor analyze: " + line));
        System.err.flush();
        return dumps.isEmpty() ? 1 : 0;
    }
}
