package dev.jdist.jaccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The side channel between real processes on loopback, including a coordinator that starts last. */
class TcpSideChannelIT {

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static Process start(int rank, int size, int port, long timeoutMs) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), SideChannelProbe.class.getName(),
                String.valueOf(rank), String.valueOf(size), "127.0.0.1", String.valueOf(port), String.valueOf(timeoutMs))
                .redirectErrorStream(true).start();
    }

    static String finish(Process p) throws Exception {
        try {
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("rank process finished").isTrue();
            return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            if (p.isAlive()) p.destroyForcibly();
        }
    }

    @Test
    @Timeout(120)
    void fourProcessesWithTheCoordinatorStartedLast() throws Exception {
        int n = 4, port = freePort();
        List<Process> ps = new ArrayList<>();
        try {
            for (int r = 1; r < n; r++) ps.add(start(r, n, port, 30_000));
            Thread.sleep(1500); // the others are already retrying (1 s, then 2 s)
            ps.addFirst(start(0, n, port, 30_000));
            for (int r = 0; r < n; r++) {
                String out = finish(ps.get(r));
                assertThat(out).as("rank %d output", r)
                        .contains("OK ints=[1, 11, 21, 31]")
                        .contains("records=[0000 ][1010 1111 ][2020 2121 2222 ][3030 3131 3232 3333 ]");
                if (r > 0) assertThat(out).as("rank %d logs its retry", r).contains("retrying in");
            }
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    @Test
    @Timeout(120)
    void aMissingRankIsNamedByTheCoordinatorWithinTheDeadline() throws Exception {
        int port = freePort();
        Process p0 = start(0, 3, port, 3000);
        Process p1 = start(1, 3, port, 3000);
        try {
            String out0 = finish(p0);
            assertThat(out0).contains("ERROR DeadlineExceededException").contains("rank(s) [2]").contains("127.0.0.1:" + port);
            String out1 = finish(p1);
            assertThat(out1).contains("ERROR");
        } finally {
            p0.destroyForcibly();
            p1.destroyForcibly();
        }
    }
}
