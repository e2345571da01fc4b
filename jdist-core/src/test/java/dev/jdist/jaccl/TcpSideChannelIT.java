package dev.jdist.jaccl;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JavaCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The side channel between real processes on loopback, including a coordinator that starts last. */
class TcpSideChannelIT {

    @TempDir
    Path dir;

    /** Starts rank {@code rank} of {@link SideChannelProgram}; returns its index in {@code ps}. */
    private int start(ChildProcesses ps, int rank, int size, int port, long timeoutMs) throws IOException {
        ps.start(dir, "rank" + rank, JavaCommand.of(SideChannelProgram.class, String.valueOf(rank), String.valueOf(size),
                "127.0.0.1", String.valueOf(port), String.valueOf(timeoutMs)), Map.of());
        return ps.size() - 1;
    }

    /** Process i's output once it has ended (within 60 s). */
    private static String finish(ChildProcesses ps, int i) throws InterruptedException {
        assertThat(ps.await(i, 60)).as("rank process finished; output:%n%s", ps.output(i)).isNotEqualTo(-1);
        return ps.output(i);
    }

    @Test
    @Timeout(120)
    void fourProcessesWithTheCoordinatorStartedLast() throws Exception {
        int n = 4, port = FreePorts.one();
        int[] index = new int[n];
        try (ChildProcesses ps = new ChildProcesses()) {
            for (int r = 1; r < n; r++) index[r] = start(ps, r, n, port, 30_000);
            Thread.sleep(1500); // the others are already retrying (1 s, then 2 s)
            index[0] = start(ps, 0, n, port, 30_000);
            for (int r = 0; r < n; r++) {
                String out = finish(ps, index[r]);
                assertThat(out).as("rank %d output", r)
                        .contains("OK ints=[1, 11, 21, 31]")
                        .contains("records=[0000 ][1010 1111 ][2020 2121 2222 ][3030 3131 3232 3333 ]");
                if (r > 0) assertThat(out).as("rank %d logs its retry", r).contains("retrying in");
            }
        }
    }

    @Test
    @Timeout(120)
    void aMissingRankIsNamedByTheCoordinatorWithinTheDeadline() throws Exception {
        int port = FreePorts.one();
        try (ChildProcesses ps = new ChildProcesses()) {
            int p0 = start(ps, 0, 3, port, 3000);
            int p1 = start(ps, 1, 3, port, 3000);
            String out0 = finish(ps, p0);
            assertThat(out0).contains("ERROR DeadlineExceededException").contains("rank(s) [2]").contains("127.0.0.1:" + port);
            String out1 = finish(ps, p1);
            assertThat(out1).contains("ERROR");
        }
    }
}
