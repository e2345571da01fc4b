package dev.jdist.launch;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.flight.FlightRecorder;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A rank of FlightRecorderIT's jobs: five all_sums of float32[1024] (#0..#4), then what the scenario in
 * {@code args[0]} makes of operation #5 on rank 1:
 * <ul>
 * <li>{@code mismatch}: rank 1 calls all_sum float32[1024] while the others call all_gather int32[12];
 * <li>{@code stop}: rank 1 stops itself (SIGSTOP) while the others call all_sum;
 * <li>{@code behind}: rank 1 computes (sleeps) for up to 5 minutes while the others call all_sum;
 * <li>{@code usr1}: every rank asks itself for a record with SIGUSR1, waits for the file, and the job ends well.
 * </ul>
 * A rank that gets to the end asks for its record in code ({@link FlightRecorder#dump}): a process that ends
 * normally writes none of its own, and in {@code mismatch} the ranks that got through their mismatched calls end.
 */
public final class FlightScenario {
    private FlightScenario() {
    }

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        Group g = Distributed.init();
        for (int i = 0; i < 5; i++) {
            g.allSum(Array.ones(DType.FLOAT32, 1024));
        }
        boolean odd = g.rank() == 1;
        switch (scenario) {
            case "mismatch" -> {
                if (odd) g.allSum(Array.ones(DType.FLOAT32, 1024));
                else g.allGather(Array.ones(DType.INT32, 12));
            }
            case "stop" -> {
                if (odd) signalSelf("STOP");
                g.allSum(Array.ones(DType.FLOAT32, 1024));
            }
            case "behind" -> {
                if (odd) Thread.sleep(TimeUnit.MINUTES.toMillis(5));
                g.allSum(Array.ones(DType.FLOAT32, 1024));
            }
            case "usr1" -> {
                Path file = FlightRecorder.directory().resolve("jdist-flight-rank-" + g.rank() + "-" + ProcessHandle.current().pid() + ".json");
                signalSelf("USR1");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!Files.exists(file) && System.nanoTime() < deadline) Thread.sleep(50);
                System.out.println("rank " + g.rank() + " record " + (Files.exists(file) ? "written" : "missing"));
                g.allSum(Array.ones(DType.FLOAT32, 1024));
            }
            default -> throw new IllegalArgumentException("unknown scenario " + scenario);
        }
        System.out.println("rank " + g.rank() + " done");
        if (!scenario.equals("usr1")) FlightRecorder.dump("end of program");
    }

    private static void signalSelf(String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(ProcessHandle.current().pid())).inheritIO().start();
        if (!kill.waitFor(30, TimeUnit.SECONDS)) kill.destroyForcibly();
    }
}
