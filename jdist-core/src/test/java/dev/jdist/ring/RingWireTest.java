package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fake-peer harness: one rank of the ring is played by this test at the byte level, over real
 * loopback sockets, from the reference (docs/reference/collectives.md §3.2–§3.8) — its expected byte streams are computed
 * here independently of {@link RingSchedule}. The other ranks are real jdist ranks in this JVM.
 * The fake checks every byte its neighbours write to it (order, values, association of partial
 * sums), that nothing is written during set-up, and that nothing extra follows an operation.
 */
@Timeout(120)
class RingWireTest {

    @TempDir
    Path dir;

    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    // ------------------------------------------------------------------ the reference, written out directly

    /** A part: element (or byte) range, connection, direction. */
    record SpecPart(long start, long len, int conn, int d) {}

    static int mod(long a, int n) { return (int) Math.floorMod(a, n); }

    /** §3.6.1 / §3.6.2: the parts of an all_sum of E float32 over n ranks and k connections. */
    static List<SpecPart> sumParts(int e, int n, int k) {
        if (e < n) return List.of(new SpecPart(0, n, 0, -1));
        long bytes = 4L * e;
        int p = (int) Math.max(1, Math.min(2L * k, bytes / (n * 262144L)));
        long step = (e + p - 1) / p;
        List<SpecPart> parts = new ArrayList<>();
        for (int i = 0; i < p; i++) {
            long s = Math.min(e, i * step), t = Math.min(e, (i + 1) * step);
            parts.add(new SpecPart(s, t - s, i / 2, i % 2 == 0 ? 1 : -1));
        }
        return parts;
    }

    /** x_q restricted to segment j of a part (padded with zeros on the small path). */
    static float[] seg(float[] x, SpecPart p, int n, int j) {
        long segLen = (p.len() + n - 1) / n;
        long a = Math.min(j * segLen, p.len()), b = Math.min((j + 1) * segLen, p.len());
        float[] out = new float[(int) (b - a)];
        for (int i = 0; i < out.length; i++) {
            long idx = p.start() + a + i;
            out[i] = idx < x.length ? x[(int) idx] : 0f;
        }
        return out;
    }

    static float[] add(float[] acc, float[] inc) {
        float[] out = new float[acc.length];
        for (int i = 0; i < acc.length; i++) out[i] = acc[i] + inc[i];
        return out;
    }

    /** §3.6.4: the partial value V_q(t) rank q sends in reduce-scatter step t. */
    static float[] partial(float[][] x, SpecPart p, int n, int q, int t) {
        int j = mod(q + (long) t * p.d(), n);
        if (t == 0) return seg(x[q], p, n, j);
        return add(seg(x[q], p, n, j), partial(x, p, n, mod(q + p.d(), n), t - 1));
    }

    /** §3.6.4: the final value of segment j, computed by its owner (j + d) mod n. */
    static float[] fin(float[][] x, SpecPart p, int n, int j) {
        int o = mod(j + p.d(), n);
        return add(seg(x[o], p, n, j), partial(x, p, n, mod(o + p.d(), n), n - 2));
    }

    /** §3.6.3: the bytes rank q writes for part p (RS partial values, then AG final values). */
    static byte[] sumStream(float[][] x, SpecPart p, int n, int q) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int t = 0; t <= n - 2; t++) write(out, partial(x, p, n, q, t));
        for (int t = 0; t <= n - 2; t++) write(out, fin(x, p, n, mod(q + (long) (t - 1) * p.d(), n)));
        return out.toByteArray();
    }

    static void write(ByteArrayOutputStream out, float[] v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        out.writeBytes(b.array());
    }

    /** §3.7: all_gather parts and the bytes rank q writes for part i. */
    static List<SpecPart> gatherParts(long bytes, int k) {
        if (bytes == 0) return List.of();
        int g = (int) Math.max(1, Math.min(2L * k, bytes / 262144));
        long chunk = (bytes + g - 1) / g;
        List<SpecPart> parts = new ArrayList<>();
        for (int i = 0; i < g; i++) {
            long s = Math.min(bytes, i * chunk), t = Math.min(bytes, (i + 1) * chunk);
            parts.add(new SpecPart(s, t - s, i / 2, i % 2 == 0 ? 1 : -1));
        }
        return parts;
    }

    static byte[] gatherStream(byte[][] blocks, SpecPart p, int n, int q) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int t = 0; t <= n - 2; t++) {
            out.write(blocks[mod(q + (long) t * p.d(), n)], (int) p.start(), (int) p.len());
        }
        return out.toByteArray();
    }

    // ------------------------------------------------------------------ the fake rank

    /** Rank f of the ring, played with blocking sockets: left[j] accepted on A(f)[j], right[j] connected to A(f+1)[j]. */
    final class FakeRank implements AutoCloseable {
        final Socket[] left;
        final Socket[] right;

        FakeRank(List<String[]> hostfile, int f, int k) throws Exception {
            int n = hostfile.size();
            left = new Socket[k];
            right = new Socket[k];
            ServerSocket[] listeners = new ServerSocket[k];
            for (int j = 0; j < k; j++) {
                listeners[j] = new ServerSocket();
                listeners[j].setReuseAddress(true);
                listeners[j].bind(address(hostfile.get(f)[j]));
                listeners[j].setSoTimeout(20_000);
            }
            Future<?> connecting = pool.submit(() -> {
                for (int j = 0; j < k; j++) right[j] = connectWithRetry(address(hostfile.get((f + 1) % n)[j]));
                return null;
            });
            for (int j = 0; j < k; j++) {
                left[j] = listeners[j].accept();
                listeners[j].close();
            }
            connecting.get(30, TimeUnit.SECONDS);
            for (Socket s : all()) {
                s.setTcpNoDelay(true);
                s.setSoTimeout(20_000);
            }
        }

        List<Socket> all() {
            List<Socket> l = new ArrayList<>(Arrays.asList(left));
            l.addAll(Arrays.asList(right));
            return l;
        }

        /** Sockets of part direction d on connection c: [where this rank sends, where it receives]. */
        Socket sendSocket(int c, int d) { return d > 0 ? left[c] : right[c]; }

        Socket recvSocket(int c, int d) { return d > 0 ? right[c] : left[c]; }

        /** Asserts that nothing (more) arrives on any socket within a short while. */
        void assertSilent(String when) throws IOException {
            for (Socket s : all()) {
                s.setSoTimeout(150);
                try {
                    int b = s.getInputStream().read();
                    throw new AssertionError(when + ": unexpected " + (b < 0 ? "EOF" : "byte " + b) + " on " + s);
                } catch (SocketTimeoutException expected) {
                    // silence, as the reference requires
                } finally {
                    s.setSoTimeout(20_000);
                }
            }
        }

        @Override
        public void close() throws IOException {
            for (Socket s : all()) if (s != null) s.close();
        }
    }

    private static InetSocketAddress address(String text) {
        int c = text.indexOf(':');
        return new InetSocketAddress(text.substring(0, c), Integer.parseInt(text.substring(c + 1)));
    }

    private static Socket connectWithRetry(InetSocketAddress a) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            try {
                Socket s = new Socket();
                s.connect(a, 2000);
                return s;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) throw e;
                Thread.sleep(20);
            }
        }
    }

    static byte[] readExactly(InputStream in, int len) throws IOException {
        byte[] b = in.readNBytes(len);
        if (b.length != len) throw new AssertionError("EOF after " + b.length + " of " + len + " bytes");
        return b;
    }

    /** A ring of n ranks where rank n-1 is the fake and ranks 0..n-2 run {@code body} in threads. */
    private void withRing(int n, int k, Consumer<GroupImpl> body, FakeScript script) throws Exception {
        Path hf = RingTestSupport.hostfile(dir, n, k);
        List<String[]> hosts = parse(hf, n, k);
        List<Future<Object>> ranks = new ArrayList<>();
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch checked = new java.util.concurrent.CountDownLatch(1);
        for (int r = 0; r < n - 1; r++) {
            int rank = r;
            ranks.add(pool.submit(() -> {
                try (GroupImpl g = new RingBackend().init(true, RingTestSupport.env(rank, hf, "20")).orElseThrow()) {
                    if (!go.await(30, TimeUnit.SECONDS)) throw new AssertionError("the fake rank never started the operation");
                    body.accept(g);
                    checked.await(30, TimeUnit.SECONDS);   // keep the sockets open until the fake has checked for silence
                }
                return null;
            }));
        }
        try (FakeRank fake = new FakeRank(hosts, n - 1, k)) {
            fake.assertSilent("after set-up (nothing may be sent during set-up)");
            go.countDown();
            script.play(fake);
            fake.assertSilent("after the operation");
            checked.countDown();
            for (Future<Object> f : ranks) f.get(60, TimeUnit.SECONDS);
        }
    }

    interface FakeScript {
        void play(FakeRank fake) throws Exception;
    }

    private static List<String[]> parse(Path hf, int n, int k) throws IOException {
        String text = Files.readString(hf);
        List<String[]> out = new ArrayList<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"([^\"]+)\"").matcher(text);
        List<String> all = new ArrayList<>();
        while (m.find()) all.add(m.group(1));
        for (int q = 0; q < n; q++) out.add(all.subList(q * k, (q + 1) * k).toArray(new String[0]));
        return out;
    }

    /** Runs writer and checker tasks concurrently (each direction of each socket is independent). */
    private void concurrently(List<Callable<Object>> tasks) throws Exception {
        List<Future<Object>> fs = new ArrayList<>();
        for (Callable<Object> t : tasks) fs.add(pool.submit(t));
        for (Future<Object> f : fs) f.get(60, TimeUnit.SECONDS);
    }

    static float[][] inputs(int n, int e, long seed) {
        Random rnd = new Random(seed);
        float[][] x = new float[n][e];
        for (int q = 0; q < n; q++) {
            for (int i = 0; i < e; i++) {
                // mixed magnitudes, so a different association would give different bytes
                x[q][i] = (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(9) - 2));
            }
        }
        return x;
    }

    // ------------------------------------------------------------------ the tests

    @ParameterizedTest(name = "n={0} k={1} E={2}")
    @CsvSource({
            "2,1,1", "2,2,1", "3,1,2", "3,2,0",          // small path (E < n)
            "2,1,10", "2,2,10", "3,1,10", "3,2,1001",    // one part
            "2,2,600000", "3,1,400000", "2,1,300000"})   // several parts
    void allSumBytesFollowTheSpec(int n, int k, int e) throws Exception {
        float[][] x = inputs(n, e, 31L * n + k + e);
        List<SpecPart> parts = sumParts(e, n, k);
        int f = n - 1;
        float[][] results = new float[n - 1][];
        withRing(n, k, g -> {
            Array out = Array.zeros(DType.FLOAT32, e);
            g.allReduce(Array.fromFloats(x[g.rank()], e), out, ReduceOp.SUM);
            results[g.rank()] = out.toFloatArray();
        }, fake -> {
            List<Callable<Object>> tasks = new ArrayList<>();
            for (SpecPart p : parts) {
                byte[] mine = sumStream(x, p, n, f);
                byte[] theirs = sumStream(x, p, n, mod(f + p.d(), n));   // the upstream neighbour writes to us
                tasks.add(() -> {
                    fake.sendSocket(p.conn(), p.d()).getOutputStream().write(mine);
                    return null;
                });
                tasks.add(() -> {
                    byte[] got = readExactly(fake.recvSocket(p.conn(), p.d()).getInputStream(), theirs.length);
                    assertThat(got).as("bytes of part %s from rank %d", p, mod(f + p.d(), n)).isEqualTo(theirs);
                    return null;
                });
            }
            concurrently(tasks);
        });
        // every jdist rank ends with the final values of §3.6.4
        for (SpecPart p : parts) {
            for (int j = 0; j < n; j++) {
                float[] want = fin(x, p, n, j);
                long segLen = (p.len() + n - 1) / n;
                long a = Math.min(j * segLen, p.len());
                for (int r = 0; r < n - 1; r++) {
                    for (int i = 0; i < want.length; i++) {
                        long idx = p.start() + a + i;
                        if (idx >= e) continue;
                        if (Float.floatToIntBits(results[r][(int) idx]) != Float.floatToIntBits(want[i])) {
                            throw new AssertionError("rank " + r + " element " + idx + ": " + results[r][(int) idx] + " vs " + want[i]);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "n={0} k={1} bytes={2}")
    @CsvSource({"2,1,8", "2,2,8", "3,1,8", "3,2,12", "2,1,600000", "2,2,600004", "3,2,1048576", "2,2,0"})
    void allGatherBytesFollowTheSpec(int n, int k, int bytes) throws Exception {
        byte[][] blocks = new byte[n][bytes];
        Random rnd = new Random(bytes + n * 7L + k);
        for (byte[] b : blocks) rnd.nextBytes(b);
        List<SpecPart> parts = gatherParts(bytes, k);
        int f = n - 1;
        withRing(n, k, g -> {
            Array out = Array.zeros(DType.UINT8, bytes * n);
            g.allGather(Array.fromBytes(DType.UINT8, blocks[g.rank()], bytes), out);
            byte[] all = out.toBytes();
            for (int q = 0; q < n; q++) {
                assertThat(Arrays.copyOfRange(all, q * bytes, (q + 1) * bytes)).as("block %d", q).isEqualTo(blocks[q]);
            }
        }, fake -> {
            List<Callable<Object>> tasks = new ArrayList<>();
            for (SpecPart p : parts) {
                byte[] mine = gatherStream(blocks, p, n, f);
                byte[] theirs = gatherStream(blocks, p, n, mod(f + p.d(), n));
                tasks.add(() -> {
                    fake.sendSocket(p.conn(), p.d()).getOutputStream().write(mine);
                    return null;
                });
                tasks.add(() -> {
                    assertThat(readExactly(fake.recvSocket(p.conn(), p.d()).getInputStream(), theirs.length))
                            .as("all_gather part %s", p).isEqualTo(theirs);
                    return null;
                });
            }
            concurrently(tasks);
        });
    }

    /** §3.8: seg = max(1024, ceil(N/k)); socket j carries [j*seg, min(N,(j+1)*seg)). */
    static List<int[]> split(int bytes, int k) {
        int seg = Math.max(1024, (bytes + k - 1) / k);
        List<int[]> out = new ArrayList<>();
        for (int j = 0; j < k && j * seg < bytes; j++) out.add(new int[] {j * seg, Math.min(bytes, (j + 1) * seg)});
        return out;
    }

    @ParameterizedTest(name = "k={0} bytes={1}")
    @CsvSource({"1,1000", "2,1000", "2,1500", "2,3000", "2,5000000", "1,0"})
    void sendAndRecvBytesFollowTheSpec(int k, int bytes) throws Exception {
        // n = 2: rank 0 (jdist) sends on right[j] (= the fake's left[j]) and receives on left[j] (= the fake's right[j])
        byte[] toFake = new byte[bytes];
        byte[] fromFake = new byte[bytes];
        new Random(bytes).nextBytes(toFake);
        new Random(bytes + 1).nextBytes(fromFake);
        withRing(2, k, g -> {
            g.send(Array.fromBytes(DType.UINT8, toFake, bytes), 1);
            Array got = Array.zeros(DType.UINT8, bytes);
            g.recv(got, 1);
            assertThat(got.toBytes()).isEqualTo(fromFake);
        }, fake -> {
            List<int[]> ranges = split(bytes, k);
            List<Callable<Object>> tasks = new ArrayList<>();
            for (int j = 0; j < ranges.size(); j++) {
                int[] rg = ranges.get(j);
                Socket in = fake.left[j];
                Socket out = fake.right[j];
                tasks.add(() -> {
                    assertThat(readExactly(in.getInputStream(), rg[1] - rg[0]))
                            .isEqualTo(Arrays.copyOfRange(toFake, rg[0], rg[1]));
                    return null;
                });
                tasks.add(() -> {
                    out.getOutputStream().write(fromFake, rg[0], rg[1] - rg[0]);
                    return null;
                });
            }
            concurrently(tasks);
        });
    }

    @Test
    void sendToTheLeftNeighbourUsesLeftSocketsInAThreeRankRing() throws Exception {
        // n = 3, fake = rank 2: rank 0 sends to its left neighbour (2) on left[j] = the fake's right[j];
        // rank 1 sends to its right neighbour (2) on right[j] = the fake's left[j].
        int bytes = 3000, k = 2;
        byte[] a = new byte[bytes], b = new byte[bytes];
        new Random(5).nextBytes(a);
        new Random(6).nextBytes(b);
        withRing(3, k, g -> g.send(Array.fromBytes(DType.UINT8, g.rank() == 0 ? a : b, bytes), 2), fake -> {
            List<Callable<Object>> tasks = new ArrayList<>();
            for (int j = 0; j < 2; j++) {
                int jj = j;
                tasks.add(() -> {
                    assertThat(readExactly(fake.right[jj].getInputStream(), 1500)).isEqualTo(Arrays.copyOfRange(a, jj * 1500, jj * 1500 + 1500));
                    return null;
                });
                tasks.add(() -> {
                    assertThat(readExactly(fake.left[jj].getInputStream(), 1500)).isEqualTo(Arrays.copyOfRange(b, jj * 1500, jj * 1500 + 1500));
                    return null;
                });
            }
            concurrently(tasks);
        });
    }
}
