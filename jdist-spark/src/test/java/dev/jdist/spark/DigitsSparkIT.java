package dev.jdist.spark;

import dev.jdist.djl.examples.Digits;
import dev.jdist.djl.examples.DigitsTraining;
import dev.jdist.testing.Requirements;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jdist-djl's digits training (docs/djl.md), unchanged, as 4 barrier tasks of a Spark local cluster: four workers of
 * one slot each, so every task has an executor JVM of its own (PyTorch allows one gradient collector per process).
 * Every task reaches the accuracy with bit-identical parameters.
 */
@Timeout(300)
class DigitsSparkIT {
    static final int TASKS = 4;

    @Test
    void fourBarrierTasksTrainTheDigitsWithIdenticalParameters() {
        Requirements.require(Digits.locate().isPresent(), "the UCI digits (digits.csv.gz: scripts/fetch-digits.sh as root puts it at "
                + Digits.CACHE + ", or install python3-sklearn, or set " + Digits.VARIABLE + ")");
        try (JavaSparkContext spark = new JavaSparkContext(SparkTestSupport.clusterConf(TASKS, 1, "jdist-djl digits")
                .set("spark.executor.extraJavaOptions", "-Dai.djl.offline=true -Dai.djl.pytorch.num_threads=1 "
                        + "-Dai.djl.pytorch.num_interop_threads=1"))) {
            SparkTestSupport.awaitIdleExecutors(spark, TASKS);
            List<String> lines = JdistSpark.run(spark, TASKS, Map.of("JDIST_TIMEOUT", "120"),
                    group -> DigitsTraining.withOptions("--epochs", "20", "--batch", "256", "--learning-rate", "0.3").train(group));
            Pattern p = Pattern.compile("rank (\\d) of 4: test accuracy ([0-9.]+) \\(\\d+ of 360\\), parameters crc32=([0-9a-f]{8})");
            String crc = null;
            for (int rank = 0; rank < TASKS; rank++) {
                Matcher m = p.matcher(lines.get(rank));
                assertThat(m.find()).as(String.join("\n", lines)).isTrue();
                assertThat(Integer.parseInt(m.group(1))).isEqualTo(rank);
                assertThat(Double.parseDouble(m.group(2))).as(lines.get(rank)).isGreaterThanOrEqualTo(0.95);
                if (crc == null) crc = m.group(3);
                assertThat(m.group(3)).as("task %d's parameters equal task 0's bit for bit%n%s", rank, String.join("\n", lines)).isEqualTo(crc);
            }
        }
    }
}
