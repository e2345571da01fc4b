package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.testing.LongTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Transfers over 2 GiB (more than one ByteBuffer view, more than one socket call) between two ranks in one JVM. It holds
 * 4.4 GB of arrays and moves them through loopback: a load on the whole machine, so it runs in the long tier, alone.
 */
@LongTest
@Timeout(600)
class RingLargeArrayIT {

    @TempDir
    Path dir;

    private static final long[] MARKS = {0, 1, (1L << 30) - 1, 1L << 30, (1L << 30) + 1, (1L << 31) - 1, 1L << 31, (1L << 31) + 1};

    @Test
    void sendAndRecvOfMoreThanTwoGiB() throws Exception {
        int rows = 2;
        int cols = 1_100_000_000;               // 2.2e9 bytes: beyond int indexing and two 1 GiB views
        long bytes = (long) rows * cols;
        Path hf = RingTestSupport.hostfile(dir, 2, 2);
        List<String> results = RingTestSupport.onEveryRank(hf, 2, Map.of("JDIST_TIMEOUT", "120"), g -> {
            if (g.rank() == 0) {
                Array x = Array.zeros(DType.UINT8, rows, cols);
                for (int i = 0; i < MARKS.length; i++) x.segment().set(ValueLayout.JAVA_BYTE, MARKS[i], (byte) (i + 1));
                x.segment().set(ValueLayout.JAVA_BYTE, bytes - 1, (byte) 99);
                g.send(x, 1);
                return "sent";
            }
            Array y = Array.zeros(DType.UINT8, rows, cols);
            g.recv(y, 0);
            StringBuilder bad = new StringBuilder();
            for (int i = 0; i < MARKS.length; i++) {
                byte b = y.segment().get(ValueLayout.JAVA_BYTE, MARKS[i]);
                if (b != i + 1) bad.append("byte ").append(MARKS[i]).append(" = ").append(b).append("; ");
            }
            if (y.segment().get(ValueLayout.JAVA_BYTE, bytes - 1) != 99) bad.append("last byte wrong");
            if (y.segment().get(ValueLayout.JAVA_BYTE, 12345) != 0) bad.append("byte 12345 not zero");
            return bad.isEmpty() ? "ok" : bad.toString();
        });
        assertThat(results).containsExactly("sent", "ok");
    }
}
