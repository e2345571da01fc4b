package dev.jdist.launch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** Output forwarding: raw bytes, lines kept whole across ranks, partial lines released after a short hold. */
@Timeout(30)
class OutputSinkTest {

    private static void w(OutputSink s, int rank, String text) {
        byte[] b = text.getBytes(StandardCharsets.ISO_8859_1);
        s.write(rank, false, b, 0, b.length);
    }

    @Test
    void linesWrittenInPiecesAreNotTornApartByOtherRanks() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        OutputSink s = new OutputSink(out, new ByteArrayOutputStream(), false, false, null);
        w(s, 0, "rank ");
        w(s, 1, "rank ");
        w(s, 1, "1 of 2\nrank 1 again ");
        w(s, 0, "0 of 2\n");
        w(s, 1, "end\n");
        assertThat(out.toString(StandardCharsets.ISO_8859_1)).isEqualTo("rank 1 of 2\nrank 0 of 2\nrank 1 again end\n");
    }

    @Test
    void aPromptWithoutNewlineIsReleasedAfterTheHoldAndBytesAreRaw() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        OutputSink s = new OutputSink(out, new ByteArrayOutputStream(), false, false, null);
        byte[] raw = {(byte) 0xff, (byte) 0xc3, 'x', '>', ' '};
        s.write(0, false, raw, 0, raw.length);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (out.size() < raw.length && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(out.toByteArray()).containsExactly(raw);
    }

    @Test
    void closeFlushesTheLastPartialLine() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        OutputSink s = new OutputSink(out, new ByteArrayOutputStream(), false, false, null);
        w(s, 0, "a\nb");
        s.close(0, false);
        assertThat(out.toString(StandardCharsets.ISO_8859_1)).isEqualTo("a\nb");
    }

    @Test
    void taggedLines() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        OutputSink s = new OutputSink(out, new ByteArrayOutputStream(), true, false, null);
        w(s, 3, "x");
        w(s, 2, "y\n");
        w(s, 3, "z\nw");
        s.close(3, false);
        assertThat(out.toString(StandardCharsets.ISO_8859_1)).isEqualTo("[2] y\n[3] xz\n[3] w\n");
    }
}
