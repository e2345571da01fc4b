package dev.jdist;

import dev.jdist.flight.FlightRecorder;
import dev.jdist.flight.OperationTrace;
import dev.jdist.spi.GroupImpl;
import jdk.jfr.Recording;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What tracing costs an operation: {@code Group.allReduceInto} on a 2-rank group whose backend does
 * nothing, so the time is the group's own (validation, the operation queue, {@link OperationTrace}).
 * {@code jfr}: {@code none} (no recording: the usual case), {@code disabled} (a recording without the
 * {@code dev.jdist.Operation} event), {@code enabled} (a recording with it, every operation an event).
 * In package {@code dev.jdist} to build a group over a fake backend. Run:
 * {@code java -jar jdist-jmh/target/benchmarks.jar OperationTrace -prof gc}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class OperationTraceBenchmark {

    @Param({"none", "disabled", "enabled"})
    public String jfr;

    @Param({"0", "1024"})
    public int flight;

    private Group group;
    private Array x;
    private Recording recording;
    private Path file;
    private Path flightDir;

    /** A backend that moves no bytes. */
    private static final class NoOpImpl implements GroupImpl {
        @Override public int rank() { return 0; }
        @Override public int size() { return 2; }
        @Override public String backendName() { return "noop"; }
        @Override public GroupImpl split(int color, int key) { return this; }
        @Override public void allReduce(Array in, Array out, ReduceOp op) {}
        @Override public void allGather(Array in, Array out) {}
        @Override public void sumScatter(Array in, Array out) {}
        @Override public void send(Array x, int dst) {}
        @Override public void recv(Array out, int src) {}
        @Override public void close() {}
    }

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        flightDir = Files.createTempDirectory("jdist-flight-bench");   // nothing fails here, so it stays empty
        FlightRecorder.resetForTesting(flight, flightDir);
        group = new Group(new NoOpImpl(), OperationTrace.WORLD);
        x = Array.ones(DType.FLOAT32, 1);
        if (!jfr.equals("none")) {
            file = Files.createTempFile("jdist-trace-bench", ".jfr");
            recording = new Recording();
            if (jfr.equals("enabled")) recording.enable(OperationEvent.NAME).withThreshold(Duration.ZERO);
            else recording.disable(OperationEvent.NAME);
            recording.setDestination(file);
            recording.setMaxSize(64L << 20);
            recording.start();
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        if (recording != null) {
            recording.close();
            Files.deleteIfExists(file);
        }
        group.close();
        Files.deleteIfExists(flightDir);
    }

    @Benchmark
    public Array allReduceInto() {
        return group.allReduceInto(x, x, ReduceOp.SUM);
    }
}
