package dev.jdist.jmh;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.reduce.Kernels;
import dev.jdist.reduce.Reducer;
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
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

/**
 * The ring's reduction kernels ({@link Reducer}) against a plain element loop over the same
 * little-endian segments. Bytes per second = {@code bytes} × ops/s (reported in docs/benchmarks.md
 * as GB/s of the accumulator). The forked JVM inherits the host's options, so
 * {@code java -jar jdist-jmh/target/benchmarks.jar ReduceKernel} measures the portable kernels and
 * {@code java --add-modules=jdk.incubator.vector -jar jdist-jmh/target/benchmarks.jar ReduceKernel}
 * the Vector API ones (each fork prints which kernels it runs).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ReduceKernelBenchmark {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Param({"float32", "float64", "int32", "bfloat16", "float16"})
    public String dtype;

    @Param({"SUM", "MAX"})
    public String op;

    /** Bytes per array: 1 MiB stays in cache; 64 MiB streams from memory as the ring's large messages do. */
    @Param({"1048576", "67108864"})
    public int bytes;

    private DType type;
    private ReduceOp reduceOp;
    private MemorySegment acc;
    private MemorySegment inc;
    private long count;

    @Setup(Level.Trial)
    public void setUp() {
        System.out.println("jdist: " + Kernels.describe());
        type = DType.fromMlxName(dtype);
        reduceOp = ReduceOp.valueOf(op);
        count = bytes / type.itemSize();
        Array a = Array.zeros(type, (int) count);
        Array b = Array.zeros(type, (int) count);
        for (long i = 0; i < count; i++) {
            a.setDouble(i, i % 7);
            b.setDouble(i, (i % 5) * 0.5);
        }
        acc = a.segment();
        inc = b.segment();
    }

    /** What the ring runs: the Vector API kernels with the module, the portable ones without. */
    @Benchmark
    public MemorySegment reducer() {
        Reducer.reduce(reduceOp, type, acc, 0, inc, 0, count);
        return acc;
    }

    /** What a straightforward implementation would write: one element at a time through the layouts. */
    @Benchmark
    public MemorySegment plainLoop() {
        boolean sum = reduceOp == ReduceOp.SUM;
        switch (type) {
            case FLOAT32 -> {
                for (long i = 0, off = 0; i < count; i++, off += 4) {
                    float x = acc.get(F32, off), y = inc.get(F32, off);
                    acc.set(F32, off, sum ? x + y : (x < y ? y : x));
                }
            }
            case FLOAT64 -> {
                for (long i = 0, off = 0; i < count; i++, off += 8) {
                    double x = acc.get(F64, off), y = inc.get(F64, off);
                    acc.set(F64, off, sum ? x + y : (x < y ? y : x));
                }
            }
            case INT32 -> {
                for (long i = 0, off = 0; i < count; i++, off += 4) {
                    int x = acc.get(I32, off), y = inc.get(I32, off);
                    acc.set(I32, off, sum ? x + y : Math.max(x, y));
                }
            }
            case BFLOAT16 -> {
                for (long i = 0, off = 0; i < count; i++, off += 2) {
                    float x = Float.intBitsToFloat(acc.get(I16, off) << 16), y = Float.intBitsToFloat(inc.get(I16, off) << 16);
                    acc.set(I16, off, Array.floatToBfloat16(sum ? x + y : (x < y ? y : x)));
                }
            }
            case FLOAT16 -> {
                for (long i = 0, off = 0; i < count; i++, off += 2) {
                    float x = Float.float16ToFloat(acc.get(I16, off)), y = Float.float16ToFloat(inc.get(I16, off));
                    acc.set(I16, off, Float.floatToFloat16(sum ? x + y : (x < y ? y : x)));
                }
            }
            default -> throw new IllegalStateException("no plain loop for " + type);
        }
        return acc;
    }
}
