package dev.jdist.mesh;

import dev.jdist.DeadlineExceededException;
import dev.jdist.PeerLostException;
import dev.jdist.algo.MeshSchedule;
import dev.jdist.ring.RingGroup;
import dev.jdist.ring.RingTestSupport;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The mesh's shared-memory lanes (docs/reference/collectives.md §10.2), two ranks as two threads of one JVM over a
 * shared-memory ring with 4 KiB links: byte streams of every size arrive whole and in order in both directions (sizes
 * that wrap the ring many times included), nothing is left in /dev/shm, and a peer that leaves or goes silent in the
 * middle of a transfer ends the other side with an error naming it.
 */
@Timeout(120)
class MeshSharedMemoryTest {

    @TempDir
    Path dir;

    private static final int LINK = 4096;
    private static final Map<String, String> SHM = Map.of("JDIST_TRANSPORT", "shm", "JDIST_SHM_BUFFER_KIB", "4");

    @BeforeAll
    static void linux() {
        assumeTrue(Files.isReadable(Path.of("/proc/sys/kernel/random/boot_id")), "JDIST_TRANSPORT=shm needs Linux's boot id");
    }

    private static MeshTransport transport(RingGroup g) {
        g.membersAreJdist(null, Map.of());
        return g.meshTransport().orElseThrow();
    }

    private static MemorySegment pattern(long bytes, int seed) {
        MemorySegment s = Arena.ofAuto().allocate(Math.max(1, bytes));
        for (long i = 0; i < bytes; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed * 7 + (i >> 8)));
        return s;
    }

    private static String firstDifference(MemorySegment got, MemorySegment want, long bytes) {
        long at = got.asSlice(0, bytes).mismatch(want.asSlice(0, bytes));
        return at < 0 ? "" : "first wrong byte at " + at + " of " + bytes;
    }

    @Test
    void streamsOfEverySizeArriveWholeInBothDirections() throws Exception {
        long[] sizes = {0, 1, 7, LINK - 1, LINK, LINK + 1, 5L * LINK + 3, 12_345, 1L << 20, (3L << 20) + 5};
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 2, SHM, g -> {
            RingGroup rg = (RingGroup) g;
            MeshTransport t = transport(rg);
            int me = g.rank();
            int peer = 1 - me;
            StringBuilder bad = new StringBuilder();
            for (long n : sizes) {
                // one direction: rank 0 sends, rank 1 receives
                MemorySegment data = me == 0 ? pattern(n, 1) : Arena.ofAuto().allocate(Math.max(1, n));
                MeshSchedule one = me == 0
                        ? new MeshSchedule.Builder().send(peer, MeshSchedule.Buffer.WORK, 0, n).build()
                        : new MeshSchedule.Builder().recv(peer, MeshSchedule.Buffer.WORK, 0, n).build();
                t.run("send " + n, one, data, null, null, null);
                if (me == 1) bad.append(firstDifference(data, pattern(n, 1), n));
                // both directions at once, in two messages each way (one stream per direction, no framing)
                MemorySegment buf = Arena.ofAuto().allocate(2 * Math.max(1, n));
                MemorySegment.copy(pattern(n, me), 0, buf, 0, n);
                long half = n / 2;
                MeshSchedule both = new MeshSchedule.Builder()
                        .send(peer, MeshSchedule.Buffer.WORK, 0, half).send(peer, MeshSchedule.Buffer.WORK, half, n - half)
                        .recv(peer, MeshSchedule.Buffer.WORK, n, half)
                        .recv(peer, MeshSchedule.Buffer.WORK, n + half, n - half).build();
                t.run("exchange " + n, both, buf, null, null, null);
                bad.append(firstDifference(buf.asSlice(n), pattern(n, peer), n));
            }
            PeerMesh mesh = t.mesh();
            return bad + "|" + mesh.openConnections() + " " + mesh.sharedMemoryConnections() + " "
                    + mesh.connection(peer).describe().contains("mesh connection over shared memory");
        });
        assertThat(out).containsOnly("|1 1 true");
        try (Stream<Path> left = Files.list(Path.of("/dev/shm"))) {
            String pid = Long.toString(ProcessHandle.current().pid());
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(f -> f.startsWith(MeshShm.FILE_PREFIX + pid + "-"));
        }
    }

    @Test
    void aPeerThatClosesMidTransferIsLostAndNamed() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        List<String> out = RingTestSupport.onEveryRank(hf, 2, SHM, g -> {
            RingGroup rg = (RingGroup) g;
            MeshTransport t = transport(rg);
            t.run("warm-up", new MeshSchedule.Builder().send(1 - g.rank(), MeshSchedule.Buffer.WORK, 0, 1)
                    .recv(1 - g.rank(), MeshSchedule.Buffer.WORK, 1, 1).build(), Arena.ofAuto().allocate(2), null, null, null);
            if (g.rank() == 0) {
                // 64 KiB of the 1 MiB rank 1 expects, through a 4 KiB link, then leave
                t.run("part", new MeshSchedule.Builder().send(1, MeshSchedule.Buffer.WORK, 0, 64 << 10).build(),
                        pattern(64 << 10, 3), null, null, null);
                return "left";
            }
            try {
                t.run("recv from rank 0", new MeshSchedule.Builder().recv(0, MeshSchedule.Buffer.WORK, 0, 1 << 20).build(),
                        Arena.ofAuto().allocate(1 << 20), null, null, null);
                return "finished";
            } catch (PeerLostException e) {
                return "lost peer=" + e.peer().orElse(-1) + ": " + e.getMessage();
            }
        });
        assertThat(out.get(0)).isEqualTo("left");
        assertThat(out.get(1)).startsWith("lost peer=0: rank 1: recv from rank 0 lost the connection to rank 0 (127.0.0.1:")
                .contains("mesh connection over shared memory) while receiving: the peer closed the connection (EOF)")
                .contains("The group is closed");
    }

    @Test
    void aSilentPeerIsADeadlineNamingIt() throws Exception {
        Path hf = RingTestSupport.hostfile(dir, 2, 1);
        Map<String, String> env = new java.util.HashMap<>(SHM);
        env.put("JDIST_TIMEOUT", "1.5");
        List<String> out = RingTestSupport.onEveryRank(hf, 2, env, g -> {
            RingGroup rg = (RingGroup) g;
            MeshTransport t = transport(rg);
            t.run("warm-up", new MeshSchedule.Builder().send(1 - g.rank(), MeshSchedule.Buffer.WORK, 0, 1)
                    .recv(1 - g.rank(), MeshSchedule.Buffer.WORK, 1, 1).build(), Arena.ofAuto().allocate(2), null, null, null);
            if (g.rank() == 0) {
                try {
                    Thread.sleep(4000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return "slept";
            }
            try {
                t.run("recv from rank 0", new MeshSchedule.Builder().recv(0, MeshSchedule.Buffer.WORK, 0, 100).build(),
                        Arena.ofAuto().allocate(100), null, null, null);
                return "finished";
            } catch (DeadlineExceededException e) {
                return "deadline: " + e.getMessage();
            }
        });
        assertThat(out.get(1)).startsWith("deadline: rank 1: recv from rank 0 (step 1 of 1) made no progress for 1.5 s")
                .contains("receiving 100 more byte(s) from rank 0 (127.0.0.1:").contains("mesh connection over shared memory");
    }
}
