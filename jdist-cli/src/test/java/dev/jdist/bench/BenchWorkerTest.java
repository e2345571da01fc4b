package dev.jdist.bench;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class BenchWorkerTest {
    @AfterEach
    void reset() { Distributed.reset(); }

    @Test
    void fillRepeatsThePatternAcrossTheWholeArray() {
        Array a = Array.zeros(DType.INT32, 1003);
        BenchWorker.fill(a, 3, 0);
        for (int i = 0; i < 1003; i++) assertThat(a.getDouble(i)).isEqualTo(BenchWorker.value(3, i));
    }

    @Test
    void aOneRankSweepReportsCheckedRowsForEveryCollective() throws Exception {
        Group g = Distributed.init(false, "any", Map.of());
        var spec = new BenchWorker.Spec(List.of("all_sum", "all_max", "all_min", "all_gather", "sum_scatter"),
                List.of(4L, 4096L), "float32", 1, 3, List.of("out-of-place", "in-place"), false, 0);
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            BenchWorker.run(g, spec);
        } finally {
            System.setOut(saved);
        }
        List<String> rows = buf.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith(BenchWorker.LINE_PREFIX)).toList();
        assertThat(rows).hasSize(5 * 2 * 2);
        assertThat(rows).allMatch(l -> l.contains("\"wrong\":0"));
    }
}
