package dev.jdist;

import dev.jdist.flight.OperationTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GroupTest {

    private final RecordingGroupImpl impl = new RecordingGroupImpl("fake", 1, 4);
    private final Group group = new Group(impl, OperationTrace.WORLD);

    @Test
    void sendAndRecvCheckThePeerAtCallTimeNamingItAndTheSize() {
        Array x = Array.ones(DType.FLOAT32, 2);
        assertThatThrownBy(() -> group.send(x, 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4").hasMessageContaining("size 4").hasMessageContaining("0..3");
        assertThatThrownBy(() -> group.sendAsync(x, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
        assertThatThrownBy(() -> group.recv(new int[] {2}, DType.FLOAT32, 7)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("7").hasMessageContaining("4");
        assertThatThrownBy(() -> group.recvLikeAsync(x, -2)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-2");
        assertThatThrownBy(() -> group.recv(new int[] {-2}, DType.FLOAT32, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative");
        assertThat(impl.calls).isEmpty();
    }

    @Test
    void sendReturnsItsInputAndRecvAllocatesTheRequestedArray() {
        Array x = Array.ones(DType.INT16, 3);
        assertThat(group.send(x, 2)).isSameAs(x);
        Array r = group.recv(new int[] {2, 3}, DType.BFLOAT16, 0);
        assertThat(r.shape()).containsExactly(2, 3);
        assertThat(r.dtype()).isEqualTo(DType.BFLOAT16);
        assertThat(group.recvLike(x, 3).shape()).containsExactly(3);
        assertThat(impl.calls).containsExactly("send 2", "recv 0", "recv 3");
    }

    @Test
    void sumScatterChecksTheShapeAtCallTime() {
        assertThatThrownBy(() -> group.sumScatter(Array.scalar(DType.FLOAT32, 1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0-d").hasMessageContaining("4");
        assertThatThrownBy(() -> group.sumScatterAsync(Array.zeros(DType.FLOAT32, 6, 2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[6, 2]").hasMessageContaining("4");
        assertThat(impl.calls).isEmpty();
        Array out = group.sumScatter(Array.arange(DType.INT32, 16).reshape(8, 2));
        assertThat(out.shape()).containsExactly(2, 2);
        assertThat(out.toIntArray()).containsExactly(4, 5, 6, 7); // the fake hands rank 1 its chunk
    }

    @Test
    void allGatherStacksAlongAxisZeroAndMakesScalarsAVector() {
        assertThat(group.allGather(Array.zeros(DType.INT8, 2, 3)).shape()).containsExactly(8, 3);
        assertThat(group.allGather(Array.scalar(DType.FLOAT64, 2)).shape()).containsExactly(4);
        assertThat(group.allGather(Array.scalar(DType.FLOAT64, 2)).toDoubleArray()).containsExactly(2, 2, 2, 2);
    }

    @Test
    void reductionsReturnANewArrayOfTheSameShapeAndDtype() throws Exception {
        Array x = Array.arange(DType.UINT16, 6).reshape(2, 3);
        Array s = group.allSum(x);
        assertThat(s).isNotSameAs(x);
        assertThat(Array.arrayEquals(s, x)).isTrue();
        assertThat(group.allMaxAsync(x).get(10, TimeUnit.SECONDS).shape()).containsExactly(2, 3);
        group.allMin(x);
        assertThat(impl.calls).containsExactly("allReduce SUM", "allReduce MAX", "allReduce MIN");
    }

    @Test
    void splitRejectsANegativeColourAndReplacesANegativeKeyByTheRank() {
        assertThatThrownBy(() -> group.split(-1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
        Group child = group.split(3);
        assertThat(impl.calls).containsExactly("split 3 1");
        group.split(2, 9);
        assertThat(impl.calls).containsExactly("split 3 1", "split 2 9");
        assertThat(child.size()).isEqualTo(1);
    }

    @Test
    void aSizeOneGroupFromABackendBehavesLikeTheSingleton() {
        Group one = new Group(new RecordingGroupImpl("fake", 0, 1), OperationTrace.WORLD);
        Array x = Array.ones(DType.FLOAT32, 3);
        assertThat(one.allSum(x)).isSameAs(x);
        assertThat(one.allMax(x)).isSameAs(x);
        assertThat(one.allMin(x)).isSameAs(x);
        assertThat(one.allGather(x)).isSameAs(x);
        Array odd = Array.ones(DType.FLOAT32, 3, 1);
        assertThat(one.sumScatter(odd)).isSameAs(odd);
        assertThat(one.allSumAsync(x).join()).isSameAs(x);
        assertThatThrownBy(() -> one.send(x, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("singleton");
        assertThatThrownBy(() -> one.recv(new int[] {1}, DType.INT8, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theSingletonGroup() {
        Group s = Group.singleton();
        assertThat(s.rank()).isZero();
        assertThat(s.size()).isEqualTo(1);
        Array x = Array.ones(DType.COMPLEX64, 2);
        Array scalar = Array.scalar(DType.INT32, 1);
        assertThat(s.allSum(x)).isSameAs(x);
        assertThat(s.allGather(scalar)).isSameAs(scalar);
        assertThat(s.sumScatter(scalar)).isSameAs(scalar);   // no shape validation on size 1
        assertThat(s.sumScatterAsync(scalar).join()).isSameAs(scalar);
        assertThatThrownBy(() -> s.send(x, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("singleton");
        assertThatThrownBy(() -> s.recvLike(x, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("singleton");
        assertThatThrownBy(() -> s.recvAsync(new int[] {1}, DType.INT8, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.split(0)).isInstanceOf(UnsupportedCollectiveException.class);
        assertThatThrownBy(() -> s.split(-1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void operationsFromSeveralThreadsRunOneAtATimeInIssueOrder() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        impl.beforeOp = op -> {
            if (op.equals("allReduce SUM")) {
                try {
                    release.await(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
        };
        CompletableFuture<Array> sum = group.allSumAsync(Array.ones(DType.FLOAT32, 4));
        CompletableFuture<Array> gather = group.allGatherAsync(Array.ones(DType.FLOAT32, 4));
        CompletableFuture<Array> fromOtherThread = CompletableFuture.supplyAsync(() -> group.send(Array.ones(DType.INT8, 1), 0));
        Thread.sleep(100);
        assertThat(impl.calls).isEmpty();
        release.countDown();
        fromOtherThread.get(10, TimeUnit.SECONDS);
        sum.get(10, TimeUnit.SECONDS);
        gather.get(10, TimeUnit.SECONDS);
        assertThat(impl.calls).containsExactly("allReduce SUM", "allGather", "send 0");
    }

    @Test
    void aFailingOperationFailsItsCallerOnlyAndTheNextOneRuns() throws Exception {
        impl.beforeOp = op -> { if (op.startsWith("allReduce")) throw new PeerLostException("rank 1 lost peer rank 2 (127.0.0.1:5000)"); };
        CompletableFuture<Array> failed = group.allSumAsync(Array.ones(DType.FLOAT32, 1));
        assertThat(group.allGather(Array.ones(DType.FLOAT32, 1)).size()).isEqualTo(4);
        assertThatThrownBy(() -> failed.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(PeerLostException.class);
        assertThatThrownBy(() -> group.allMax(Array.ones(DType.FLOAT32, 1))).isInstanceOf(PeerLostException.class);
    }

    @Test
    void closeClosesTheBackendGroupAndRejectsLaterOperations() {
        group.close();
        assertThat(impl.closed).isTrue();
        assertThatThrownBy(() -> group.allSum(Array.ones(DType.FLOAT32, 1))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }
}
