package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.RankRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The operations MLX lacks at the API (spec docs/reference/collectives.md §13): what {@link Group} checks before a
 * backend sees a request, what size-1 groups do, the MLX-peer rule (§13.1), and the values on in-JVM thread groups.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdistOperationsTest {

    private final RecordingGroupImpl impl = new RecordingGroupImpl("fake", 1, 4);
    private final Group group = new Group(impl, OperationTrace.WORLD);

    @AfterEach
    void reset() { Distributed.reset(); }

    /** A job table of n jdist members, as a rendezvous (or the agreement over a token group) produces. */
    static JobTable table(int n) {
        List<RankRecord> records = new ArrayList<>();
        for (int q = 0; q < n; q++) {
            records.add(new RankRecord(q, "RANK", n, "WORLD_SIZE", "test", "fake", "0", 1, "", "", "", Map.of(), "127.0.0.1",
                    "localhost", 1, "boot", List.of(), List.of()));
        }
        return new JobTable("test", records, null);
    }

    // ------------------------------------------------------------------ argument checks, before any backend call

    @Test
    void rootsOutsideTheGroupAreRejectedNamingTheRootAndTheValidOnes() {
        Array x = Array.ones(DType.FLOAT32, 8);
        assertThatThrownBy(() -> group.broadcast(x, 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("broadcast").hasMessageContaining("root 4").hasMessageContaining("0..3");
        assertThatThrownBy(() -> group.broadcastAsync(x, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
        assertThatThrownBy(() -> group.broadcastInto(x, 9)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("9");
        assertThatThrownBy(() -> group.gather(x, 4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gather");
        assertThatThrownBy(() -> group.gatherAsync(x, -3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-3");
        assertThatThrownBy(() -> group.scatter(x, 5)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatter");
        assertThatThrownBy(() -> group.scatterInto(x, Array.zeros(DType.FLOAT32, 2), 4)).isInstanceOf(IllegalArgumentException.class);
        // a size-1 group has one root, 0
        assertThatThrownBy(() -> Group.singleton().broadcast(x, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("size 1");
        assertThat(impl.calls).isEmpty();
    }

    @Test
    void allToAllAndScatterNeedAnAxisZeroThatDividesByTheGroupSize() {
        assertThatThrownBy(() -> group.allToAll(Array.scalar(DType.INT32, 1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("all_to_all").hasMessageContaining("0-d");
        assertThatThrownBy(() -> group.allToAll(Array.zeros(DType.INT32, 6, 2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[6, 2]").hasMessageContaining("4");
        assertThatThrownBy(() -> group.allToAllAsync(Array.zeros(DType.INT32, 3))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> group.scatter(Array.zeros(DType.INT32, 5), 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("scatter").hasMessageContaining("[5]");
        assertThatThrownBy(() -> group.scatterAsync(Array.scalar(DType.INT32, 0), 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0-d");
        assertThat(impl.calls).isEmpty();
        assertThat(group.allToAll(Array.zeros(DType.INT32, 8, 2)).shape()).containsExactly(8, 2);
        assertThat(group.scatter(Array.arange(DType.INT32, 8), 1).toIntArray()).containsExactly(2, 3);   // the root's own block 1
    }

    @Test
    void allToAllVChecksTheSplits() {
        Array x = Array.zeros(DType.FLOAT32, 5, 3);
        assertThatThrownBy(() -> group.allToAllV(x, new int[] {1, 1, 1})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("one entry per rank (4)");
        assertThatThrownBy(() -> group.allToAllV(x, new int[] {1, 1, 1, 1})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4 rows").hasMessageContaining("5 rows");
        assertThatThrownBy(() -> group.allToAllV(x, new int[] {6, -1, 0, 0})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sendSplits[1] = -1");
        assertThatThrownBy(() -> group.allToAllV(x, new int[] {2, 1, 1, 1}, new int[] {0, 0, -2, 0}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("recvSplits[2]");
        assertThatThrownBy(() -> group.allToAllV(x, null, new int[4])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("null");
        assertThatThrownBy(() -> group.allToAllV(Array.scalar(DType.FLOAT32, 1), new int[4])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0-d");
        assertThat(impl.calls).isEmpty();
        Array out = group.allToAllV(x, new int[] {2, 1, 1, 1}, new int[] {0, 3, 0, 4});
        assertThat(out.shape()).containsExactly(7, 3);
        // counts reach the backend in elements (rows x 3)
        assertThat(impl.calls).containsExactly("allToAllV [6, 3, 3, 3] [0, 9, 0, 12]");
    }

    @Test
    void intoVariantsCheckTheirOutputs() {
        Array x = Array.zeros(DType.FLOAT32, 8);
        assertThatThrownBy(() -> group.allToAllInto(x, Array.zeros(DType.FLOAT32, 7))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("32 bytes");
        assertThatThrownBy(() -> group.allToAllInto(x, x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("share memory");
        assertThatThrownBy(() -> group.allToAllInto(Array.zeros(DType.FLOAT32, 6), Array.zeros(DType.FLOAT32, 6)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4 equal blocks");
        // the root of a gather needs an output of n times the input; other ranks need none
        RecordingGroupImpl root = new RecordingGroupImpl("fake", 2, 4);
        Group atRoot = new Group(root, OperationTrace.WORLD);
        assertThatThrownBy(() -> atRoot.gatherInto(x, null, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("root (rank 2) needs an output");
        assertThatThrownBy(() -> atRoot.gatherInto(x, Array.zeros(DType.INT32, 32), 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("float32 with 128 bytes");
        assertThatThrownBy(() -> atRoot.scatterInto(null, x, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("root (rank 2) needs the array");
        assertThatThrownBy(() -> atRoot.scatterInto(x, x, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4 x 32 bytes");
        assertThatThrownBy(() -> group.scatterInto(x, null, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("output array on every rank");
        assertThat(impl.calls).isEmpty();
        assertThat(root.calls).isEmpty();
        assertThat(group.gatherInto(x, null, 2)).isSameAs(x);
        Array mine = Array.zeros(DType.FLOAT32, 2);
        assertThat(group.scatterInto(null, mine, 0)).isSameAs(mine);
        assertThat(impl.calls).containsExactly("gather 2 (no output)", "scatter 0 (no input)");
    }

    @Test
    void batchesCheckEveryPeerAndRefuseThisRank() {
        Array x = Array.ones(DType.INT8, 3);
        assertThatThrownBy(() -> group.batchSendRecv(List.of(PeerOp.send(x, 0), PeerOp.recv(x, 4))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rank 4").hasMessageContaining("0..3");
        assertThatThrownBy(() -> group.batchSendRecv(List.of(PeerOp.send(x, 1)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("itself");
        assertThatThrownBy(() -> group.batchSendRecv(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> group.send(x, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("itself");
        assertThatThrownBy(() -> PeerOp.recv(new int[] {-1}, DType.INT8, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative");
        assertThat(impl.calls).isEmpty();
        assertThat(group.batchSendRecv(List.of())).isEmpty();
        List<Array> got = group.batchSendRecv(List.of(PeerOp.recv(new int[] {2}, DType.INT16, 3), PeerOp.send(x, 0),
                PeerOp.recv(x, 2)));
        assertThat(got).hasSize(2);
        assertThat(got.get(0).shape()).containsExactly(2);
        assertThat(got.get(1)).isSameAs(x);
    }

    // ------------------------------------------------------------------ size-1 groups

    @Test
    void aSizeOneGroupReturnsItsInputsAndNeedsNoPeer() {
        Group one = Group.singleton();
        Array x = Array.arange(DType.FLOAT32, 6);
        assertThat(one.broadcast(x, 0)).isSameAs(x);
        one.barrier();
        assertThat(one.allToAll(x)).isSameAs(x);
        assertThat(one.allToAllV(x, new int[] {6})).isSameAs(x);
        assertThat(one.gather(x, 0)).isSameAs(x);
        assertThat(one.scatter(x, 0)).isSameAs(x);
        Array out = Array.zeros(DType.FLOAT32, 6);
        assertThat(one.allToAllInto(x, out)).isSameAs(out);
        assertThat(out.toFloatArray()).containsExactly(x.toFloatArray());
        assertThat(one.batchSendRecv(List.of())).isEmpty();
        assertThatThrownBy(() -> one.batchSendRecv(List.of(PeerOp.send(x, 0)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("singleton");
        assertThatThrownBy(() -> one.allToAllV(x, new int[] {5})).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theDefaultGroupsConveniencesAreTheGroupsMethods() {
        Distributed.init(false, "any", Map.of());   // nothing configured: the 1-rank group
        Array x = Array.arange(DType.INT32, 4);
        assertThat(Distributed.broadcast(x, 0)).isSameAs(x);
        Distributed.barrier();
        assertThat(Distributed.allToAll(x)).isSameAs(x);
        assertThat(Distributed.allToAllV(x, new int[] {4})).isSameAs(x);
        assertThat(Distributed.allToAllV(x, new int[] {4}, new int[] {4})).isSameAs(x);
        assertThat(Distributed.gather(x, 0)).isSameAs(x);
        assertThat(Distributed.scatter(x, 0)).isSameAs(x);
        assertThat(Distributed.batchSendRecv(List.of())).isEmpty();
    }

    // ------------------------------------------------------------------ MLX peers (§13.1)

    @Test
    void withMlxPeersPossibleTheOperationsMlxLacksFailBeforeTheBackendIsCalled() {
        impl.mlxWire = true;   // a ring formed from MLX variables without a job token
        Array x = Array.zeros(DType.FLOAT32, 8);
        List<Runnable> calls = List.of(() -> group.broadcast(x, 0), () -> group.broadcastInto(x, 0), group::barrier,
                () -> group.allToAll(x), () -> group.allToAllV(x, new int[] {2, 2, 2, 2}),
                () -> group.allToAllV(x, new int[] {2, 2, 2, 2}, new int[] {2, 2, 2, 2}), () -> group.gather(x, 0),
                () -> group.scatter(x, 0), () -> group.scatterInto(null, Array.zeros(DType.FLOAT32, 2), 0),
                () -> group.batchSendRecv(List.of(PeerOp.send(x, 2))), () -> group.broadcastAsync(x, 1),
                () -> group.allToAllAsync(x), () -> group.barrierAsync());
        for (Runnable call : calls) {
            assertThatThrownBy(call::run).isInstanceOf(UnsupportedCollectiveException.class)
                    .hasMessageContaining("not supported with MLX peers in the group").hasMessageContaining("JDIST_JOB_TOKEN");
        }
        // send/recv keep MLX's rule: neighbours only
        assertThatThrownBy(() -> group.send(x, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rank 1 cannot send to rank 3").hasMessageContaining("not supported with MLX peers");
        assertThatThrownBy(() -> group.recvLike(x, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not supported with MLX peers");
        assertThat(impl.calls).isEmpty();
        group.send(x, 2);
        group.recvLike(x, 0);
        assertThat(impl.calls).containsExactly("send 2", "recv 0");
    }

    @Test
    void aGroupOfKnownJdistMembersAndItsSplitsRunThem() {
        RecordingGroupImpl ring = new RecordingGroupImpl("fake", 1, 4);
        ring.mlxWire = true;
        Group jdist = new Group(ring, OperationTrace.WORLD, table(4), null);
        Array x = Array.zeros(DType.FLOAT32, 8);
        jdist.broadcast(x, 0);
        jdist.barrier();
        jdist.send(x, 3);
        assertThat(ring.calls).containsExactly("broadcast 0", "barrier", "send 3");
        // a split of jdist members holds jdist members; a split of a group that may hold MLX ranks may too
        RecordingGroupImpl child = new RecordingGroupImpl("fake", 0, 2);
        child.mlxWire = true;
        ring.splitChild = () -> child;
        jdist.split(1).barrier();
        assertThat(child.calls).containsExactly("barrier");
        Group fromMlx = new Group(ring, OperationTrace.WORLD);
        assertThatThrownBy(() -> fromMlx.split(0).barrier()).isInstanceOf(UnsupportedCollectiveException.class)
                .hasMessageContaining("split from such a group");
        assertThatThrownBy(fromMlx::barrier).isInstanceOf(UnsupportedCollectiveException.class);
    }

    // ------------------------------------------------------------------ values, on thread groups

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void theSharedChecksPassOnThreadGroups(int n) {
        ThreadGroups tg = ThreadGroups.of(n);
        List<List<String>> failures = tg.onEveryRank(g -> CollectiveChecks.run(g, CollectiveChecks.Options.full(4096)));
        assertThat(failures).allSatisfy(f -> assertThat(f).isEmpty());
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 5})
    void valuesOnThreadGroups(int n) {
        ThreadGroups tg = ThreadGroups.of(n);
        List<String> failures = tg.onEveryRank(g -> {
            StringBuilder bad = new StringBuilder();
            int r = g.rank();
            int root = n - 1;
            Array b = g.broadcast(Array.full(DType.INT32, r == root ? 7 : -1, 3), root);
            if (!java.util.Arrays.equals(b.toIntArray(), new int[] {7, 7, 7})) bad.append("broadcast ").append(b).append('\n');
            g.barrier();
            // all_to_all: block j of rank r holds 10*r + j
            int[] v = new int[2 * n];
            for (int j = 0; j < n; j++) v[2 * j] = v[2 * j + 1] = 10 * r + j;
            int[] a = g.allToAll(Array.fromInts(v, 2 * n)).toIntArray();
            for (int q = 0; q < n; q++) if (a[2 * q] != 10 * q + r) bad.append("all_to_all q=").append(q).append('\n');
            // all_to_all_v: rank r sends q+1 rows to rank q, each holding r
            int[] splits = new int[n];
            int rows = 0;
            for (int q = 0; q < n; q++) rows += splits[q] = q + 1;
            Array send = Array.full(DType.INT64, r, rows, 2);
            Array got = g.allToAllV(send, splits);
            if (got.shape(0) != n * (r + 1)) bad.append("all_to_all_v rows ").append(got.shape(0)).append('\n');
            for (int q = 0; q < n; q++) if (got.getLong((long) q * (r + 1) * 2) != q) bad.append("all_to_all_v from ").append(q).append('\n');
            Array gathered = g.gather(Array.full(DType.FLOAT32, r, 2), 0);
            if (r == 0 && gathered.getDouble(2L * (n - 1)) != n - 1) bad.append("gather\n");
            Array part = g.scatter(Array.arange(DType.INT32, 3 * n), 1);
            if (part.toIntArray()[0] != 3 * r) bad.append("scatter ").append(part).append('\n');
            // a ring exchange in one batch: everybody sends right and receives from the left, sends listed first
            List<Array> in = g.batchSendRecv(List.of(PeerOp.send(Array.full(DType.INT16, r, 4), (r + 1) % n),
                    PeerOp.recv(new int[] {4}, DType.INT16, (r - 1 + n) % n)));
            if (in.getFirst().getLong(3) != (r - 1 + n) % n) bad.append("batch ").append(in).append('\n');
            return bad.toString();
        });
        assertThat(String.join("", failures)).isEmpty();
    }
}
