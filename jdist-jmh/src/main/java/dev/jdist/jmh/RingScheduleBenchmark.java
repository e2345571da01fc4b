package dev.jdist.jmh;

import dev.jdist.ring.RingSchedule;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The ring's schedule (the algorithm half of the ring: which byte ranges go to which neighbour, in
 * which order), computed on every call. Its cost is part of every operation's latency, so it must stay
 * far below the ~20 µs of a small all_sum on loopback. Run:
 * {@code java -jar jdist-jmh/target/benchmarks.jar RingSchedule}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RingScheduleBenchmark {

    /** Ranks in the ring. */
    @Param({"2", "8", "64"})
    public int ranks;

    /** Connections per neighbour. */
    @Param({"1", "4"})
    public int connections;

    /** Message bytes: the small path, one part, and many parts. */
    @Param({"4", "1048576", "268435456"})
    public long bytes;

    @Benchmark
    public List<RingSchedule.Stream> allReduce() {
        long elements = bytes / 4;
        if (RingSchedule.isSmallPath(elements, ranks) && (long) ranks * 4 > RingSchedule.SMALL_PATH_LIMIT_BYTES) {
            return List.of(); // MLX refuses this case; nothing to schedule
        }
        return RingSchedule.allReduce(1 % ranks, ranks, connections, elements, 4);
    }

    @Benchmark
    public List<RingSchedule.Stream> allGather() {
        return RingSchedule.allGather(1 % ranks, ranks, connections, bytes);
    }

    @Benchmark
    public List<RingSchedule.Stream> sumScatter() {
        return RingSchedule.sumScatter(1 % ranks, ranks, connections, Math.max(1, bytes / 4 / ranks), 4);
    }
}
