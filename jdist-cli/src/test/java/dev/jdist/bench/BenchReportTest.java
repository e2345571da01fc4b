package dev.jdist.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import javax.xml.parsers.DocumentBuilderFactory;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class BenchReportTest {
    private static final List<BenchResult> ROWS = List.of(
            new BenchResult("all_sum", "out-of-place", 4, 1, "float32", "sum", 2, 20.5, 31.0, 0.0002, 0.0002, 0, 90L << 20),
            new BenchResult("all_sum", "out-of-place", 1 << 20, 1 << 18, "float32", "sum", 2, 800, 900, 1.31, 1.31, 0, 95L << 20),
            new BenchResult("all_gather", "out-of-place", 1 << 20, 1 << 18, "float32", "none", 2, 700, 750, 1.5, 0.75, 0, 96L << 20));

    @Test
    void busFactorsAreNcclTests() {
        assertThat(BenchOp.ALL_SUM.busFactor(4)).isCloseTo(1.5, within(1e-12));
        assertThat(BenchOp.ALL_GATHER.busFactor(4)).isCloseTo(0.75, within(1e-12));
        assertThat(BenchOp.SUM_SCATTER.busFactor(2)).isCloseTo(0.5, within(1e-12));
        assertThat(BenchOp.SEND_RECV.busFactor(2)).isEqualTo(1);
        assertThat(BenchOp.BROADCAST.busFactor(5)).isEqualTo(1);
        assertThat(BenchOp.ALL_TO_ALL.busFactor(4)).isCloseTo(0.75, within(1e-12));
        assertThat(BenchOp.parse("alltoall")).isEqualTo(BenchOp.ALL_TO_ALL);
        assertThat(BenchOp.parse("all-sum")).isEqualTo(BenchOp.ALL_SUM);
    }

    @Test
    void tableHasTheUsualColumnsAndOneBlockPerOp() {
        String t = BenchTable.text(ROWS);
        assertThat(t).contains("size", "count", "type", "redop", "median(us)", "p99(us)", "algbw", "busbw", "#wrong", "peakRSS");
        assertThat(t).contains("# all_sum, 2 ranks, float32").contains("# all_gather, 2 ranks, float32");
        assertThat(t.lines().filter(l -> l.contains("1048576")).count()).isEqualTo(2);
        assertThat(BenchTable.csv(ROWS).lines().count()).isEqualTo(4);
    }

    @Test
    void plotsArePngAndWellFormedSvg(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("p.png");
        BenchPlot.write(ROWS, "test", png);
        BufferedImage img = ImageIO.read(png.toFile());
        assertThat(img.getWidth()).isGreaterThan(500);
        Path svg = dir.resolve("p.svg");
        BenchPlot.write(ROWS, "test <&>", svg);
        var doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
        assertThat(doc.getElementsByTagName("circle").getLength()).isEqualTo(2 * ROWS.size());
    }
}
