package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code JDIST_TRANSPORT=shm} in one JVM (a thread per rank, as {@link RingInProcessTest}): the
 * settings, the host check, every op over shared memory (arrays larger than the shared buffers,
 * tiny buffers for many wraps), split, and no file left behind.
 */
@Timeout(120)
class ShmTransportTest {

    @TempDir
    Path dir;

    // ------------------------------------------------------------------ settings

    @Test
    void transportValues() {
        assertThat(RingSettings.parseTransport(null)).isEqualTo(RingSettings.Transport.TCP);
        assertThat(RingSettings.parseTransport("")).isEqualTo(RingSettings.Transport.TCP);
        assertThat(RingSettings.parseTransport("tcp")).isEqualTo(RingSettings.Transport.TCP);
        assertThat(RingSettings.parseTransport("shm")).isEqualTo(RingSettings.Transport.SHM);
        assertThat(RingSettings.parseTransport(" SHM ")).isEqualTo(RingSettings.Transport.SHM);
    }

    @ParameterizedTest
    @ValueSource(strings = {"shmem", "rdma", "1", "tcp,shm"})
    void aBadTransportIsAConfigErrorNamingVariableValueAndChoices(String bad) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        Map<String, String> env = RingTestSupport.env(0, hf, "5");
        env.put("JDIST_TRANSPORT", bad);
        assertThatThrownBy(() -> new RingBackend().init(true, env))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_TRANSPORT").hasMessageContaining("\"" + bad + "\"")
                .hasMessageContaining("tcp").hasMessageContaining("shm");
    }

    @Test
    void shmBufferValues() {
        assertThat(RingSettings.parseShmBufferKib(null)).isEqualTo(RingSettings.DEFAULT_SHM_BUFFER_KIB);
        assertThat(RingSettings.parseShmBufferKib("64")).isEqualTo(64);
        for (String bad : new String[] {"0", "2", "100", "16384", "big", "-64"}) {
            assertThatThrownBy(() -> RingSettings.parseShmBufferKib(bad)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("JDIST_SHM_BUFFER_KIB").hasMessageContaining(bad);
        }
    }

    @Test
    void ranksOnSeveralHostsAreNamed() {
        List<ShmSetup.Host> hosts = List.of(new ShmSetup.Host(0, "boot-a", "alpha", 10), new ShmSetup.Host(1, "boot-a", "alpha", 11),
                new ShmSetup.Host(2, "boot-b", "beta", 12), new ShmSetup.Host(3, "boot-b", "beta", 13));
        assertThatThrownBy(() -> ShmSetup.checkOneHost(1, hosts))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_TRANSPORT=shm")
                .hasMessageContaining("rank(s) 2, 3 are on another host than rank 0")
                .hasMessageContaining("ranks 0, 1 on host 'alpha'").hasMessageContaining("ranks 2, 3 on host 'beta'")
                .hasMessageContaining("Unset JDIST_TRANSPORT");
        ShmSetup.checkOneHost(0, List.of(new ShmSetup.Host(0, "b", "h", 1), new ShmSetup.Host(1, "b", "h", 2)));
    }

    // ------------------------------------------------------------------ rings over shared memory

    private static Map<String, String> shm(String bufferKib) {
        Map<String, String> env = new HashMap<>();
        env.put("JDIST_TRANSPORT", "shm");
        if (bufferKib != null) env.put("JDIST_SHM_BUFFER_KIB", bufferKib);
        return env;
    }

    private static List<Path> leftovers() throws IOException {
        String prefix = ShmSetup.FILE_PREFIX + ProcessHandle.current().pid() + "-";
        try (Stream<Path> s = Files.list(ShmSetup.directory())) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).toList();
        }
    }

    @ParameterizedTest(name = "{0} ranks, k = {1}, buffer {2} KiB")
    @CsvSource({"2,1,", "2,2,4", "3,1,64", "3,2,", "4,1,4", "4,2,"})
    void everyOpOverSharedMemory(int n, int k, String bufferKib) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, k);
        List<String> failures = RingTestSupport.onEveryRank(hf, n, shm(bufferKib), g -> {
            StringBuilder bad = new StringBuilder();
            try {
                if (!((RingGroup) g).transportName().equals("shm")) bad.append("not on shared memory\n");
                checkAll(g, bad);
            } catch (RuntimeException e) {
                bad.append("rank ").append(g.rank()).append(": ").append(e).append('\n');
            }
            return bad.toString();
        });
        assertThat(String.join("", failures)).isEmpty();
        assertThat(leftovers()).isEmpty();
    }

    @ParameterizedTest(name = "{0} ranks, k = {1}, work buffer {2} bytes")
    @CsvSource({"2,1,1000", "3,2,1000", "3,1,24", "2,2,16777216", "4,1,4096"})
    void sumScatterPiecesReadTheInputInPlace(int n, int k, long workBytes) throws Exception {
        // over shm each piece's work blocks are read from the input where first needed (no copy pass)
        assertThat(String.join("", RingTestSupport.sumScatterInPieces(dir, n, k, workBytes, shm("16")))).isEmpty();
    }

    @Test
    void sleepersAreWokenByTheDoorbell() throws Exception {
        // rank 1 starts each step 30 ms late, so rank 0 goes past its spin and yield phases and sleeps in
        // select: a receiver waiting for data, then a sender waiting for space (8 MB through 64 KiB buffers)
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        List<String> failures = RingTestSupport.onEveryRank(hf, 2, shm("64"), g -> {
            StringBuilder bad = new StringBuilder();
            int r = g.rank();
            try {
                for (int round = 0; round < 3; round++) {
                    int e = 2_000_000;
                    Array x = Array.zeros(DType.FLOAT32, e);
                    for (int i = 0; i < e; i += 1000) x.setDouble(i, r + round);
                    Array y = Array.zeros(DType.FLOAT32, e);
                    if (r == 1) Thread.sleep(30);
                    g.allReduce(x, y, ReduceOp.SUM);            // rank 0 waits for data
                    if (y.getDouble(1000) != 1 + 2 * round) bad.append("sum round ").append(round).append('\n');
                    if (r == 0) {
                        g.send(x, 1);                           // blocks for space until rank 1 reads
                    } else {
                        Thread.sleep(30);
                        g.recv(y, 0);
                        if (y.getDouble(2000) != round) bad.append("recv round ").append(round).append('\n');
                    }
                }
            } catch (InterruptedException e) {
                bad.append("interrupted\n");
            }
            return bad.toString();
        });
        assertThat(String.join("", failures)).isEmpty();
    }

    private static double v(int q, long i) { return (i % 7) + q; }

    static void checkAll(GroupImpl g, StringBuilder bad) {
        int n = g.size();
        int r = g.rank();
        // sizes: small path, one part, several parts, larger than the default 1 MiB buffer
        for (int e : new int[] {0, 1, n - 1, n, 10, 1000, 3 * 262144 * 2 * 2 / 4 + 13, 700_001}) {
            for (DType t : new DType[] {DType.FLOAT32, DType.INT64, DType.FLOAT16, DType.UINT8}) {
                Array in = Array.zeros(t, e);
                for (int i = 0; i < e; i++) in.setDouble(i, t == DType.UINT8 ? (i % 7) % 2 + r % 2 : v(r, i) % 8);
                Array out = Array.zeros(t, e);
                g.allReduce(in, out, ReduceOp.SUM);
                for (int i = 0; i < e; i += Math.max(1, e / 1000)) {
                    double want = 0;
                    for (int q = 0; q < n; q++) want += t == DType.UINT8 ? (i % 7) % 2 + q % 2 : v(q, i) % 8;
                    if (out.getDouble(i) != want) {
                        bad.append("rank ").append(r).append(' ').append(t).append(" sum E=").append(e).append(" i=").append(i)
                                .append(" got ").append(out.getDouble(i)).append(" want ").append(want).append('\n');
                        break;
                    }
                }
                g.allReduce(in, in, ReduceOp.MAX);   // in place
                for (int i = 0; i < e; i += Math.max(1, e / 1000)) {
                    double want = Double.NEGATIVE_INFINITY;
                    for (int q = 0; q < n; q++) want = Math.max(want, t == DType.UINT8 ? (i % 7) % 2 + q % 2 : v(q, i) % 8);
                    if (in.getDouble(i) != want) {
                        bad.append("rank ").append(r).append(' ').append(t).append(" max E=").append(e).append(" i=").append(i).append('\n');
                        break;
                    }
                }
            }
            Array in = Array.zeros(DType.FLOAT32, e);
            for (int i = 0; i < e; i++) in.setDouble(i, v(r, i));
            Array gathered = Array.zeros(DType.FLOAT32, e * n);
            g.allGather(in, gathered);
            for (int q = 0; q < n; q++) {
                for (int i = 0; i < e; i += Math.max(1, e / 1000)) {
                    if (gathered.getDouble((long) q * e + i) != v(q, i)) {
                        bad.append("rank ").append(r).append(" gather E=").append(e).append(" q=").append(q).append(" i=").append(i).append('\n');
                        q = n;
                        break;
                    }
                }
            }
            // sum_scatter: chunk of e elements
            Array whole = Array.zeros(DType.FLOAT32, e * n);
            for (long i = 0; i < (long) e * n; i++) whole.setDouble(i, v(r, i));
            Array mine = Array.zeros(DType.FLOAT32, e);
            g.sumScatter(whole, mine);
            for (int i = 0; i < e; i += Math.max(1, e / 1000)) {
                long gi = (long) r * e + i;
                double want = 0;
                for (int q = 0; q < n; q++) want += v(q, gi);
                if (mine.getDouble(i) != want) {
                    bad.append("rank ").append(r).append(" sum_scatter C=").append(e).append(" i=").append(i).append('\n');
                    break;
                }
            }
            // send right, receive from left (even ranks send first)
            int right = (r + 1) % n;
            int left = (r - 1 + n) % n;
            Array got = Array.zeros(DType.FLOAT32, e);
            if (r % 2 == 0) {
                g.send(in, right);
                g.recv(got, left);
            } else {
                g.recv(got, left);
                g.send(in, right);
            }
            for (int i = 0; i < e; i += Math.max(1, e / 1000)) {
                if (got.getDouble(i) != v(left, i)) {
                    bad.append("rank ").append(r).append(" recv E=").append(e).append(" i=").append(i).append('\n');
                    break;
                }
            }
        }
        // split: even and odd ranks, reverse order; the sub-group is on shared memory too
        try (GroupImpl sub = g.split(r % 2, n - r)) {
            if (sub.size() > 1 && !((RingGroup) sub).transportName().equals("shm")) bad.append("split group not on shm\n");
            Array x = Array.zeros(DType.INT32, 300_000);
            for (int i = 0; i < 300_000; i++) x.setDouble(i, r + i % 3);
            Array y = Array.zeros(DType.INT32, 300_000);
            sub.allReduce(x, y, ReduceOp.SUM);
            double members = 0;
            double count = 0;
            for (int q = 0; q < n; q++) {
                if (q % 2 == r % 2) {
                    members += q;
                    count++;
                }
            }
            for (int i = 0; i < 300_000; i += 997) {
                if (y.getDouble(i) != members + count * (i % 3)) {
                    bad.append("rank ").append(r).append(" split sum i=").append(i).append(" got ").append(y.getDouble(i)).append('\n');
                    break;
                }
            }
        }
        // the parent still works after the split
        Array one = Array.zeros(DType.FLOAT32, 3);
        one.setDouble(0, 1);
        Array s = Array.zeros(DType.FLOAT32, 3);
        g.allReduce(one, s, ReduceOp.SUM);
        if (s.getDouble(0) != n) bad.append("rank ").append(r).append(" parent after split: ").append(s.getDouble(0)).append('\n');
    }

    @Test
    void capacityIsBoundedPerGroup() {
        assertThat(ShmSetup.linkCapacity(1 << 20, 1)).isEqualTo(1 << 20);
        assertThat(ShmSetup.linkCapacity(8 << 20, 1)).isEqualTo(4 << 20);   // 4 links * 4 MiB + headers <= 32 MiB
        for (int k = 1; k <= 16; k++) {
            for (long req : new long[] {4096, 1 << 20, 8 << 20}) {
                long cap = ShmSetup.linkCapacity(req, k);
                assertThat(Long.bitCount(cap)).isEqualTo(1);
                assertThat(cap).isLessThanOrEqualTo(req);
                assertThat(2 * ShmSetup.fileBytes(k, cap)).isLessThanOrEqualTo(ShmSetup.MAX_MAPPED_PER_GROUP + 2 * ShmSetup.FILE_HEADER);
            }
        }
    }
}
