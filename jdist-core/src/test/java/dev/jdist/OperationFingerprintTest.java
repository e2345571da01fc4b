package dev.jdist;

import dev.jdist.flight.OperationTrace;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

public class OperationFingerprintTest {

    /** {@code f} with another history digest (as a rank that called other collectives before would have). */
    public static OperationFingerprint withHistory(OperationFingerprint f, int previous) {
        return new OperationFingerprint(f.sequence(), f.collective(), f.kind(), f.dtype(), f.shape(), f.peer(), previous);
    }

    @Test
    void theHistoryDigestFollowsTheCollectivesNotTheSendsAndReceives() {
        OperationFingerprint a = new OperationFingerprint(0, 0, OperationTrace.Kind.ALL_SUM, DType.FLOAT32, new int[] {4}, -1, 0);
        OperationFingerprint s = new OperationFingerprint(1, 1, OperationTrace.Kind.SEND, DType.FLOAT32, new int[] {4}, 1, a.history());
        OperationFingerprint b = new OperationFingerprint(2, 1, OperationTrace.Kind.ALL_SUM, DType.FLOAT32, new int[] {4}, -1, s.history());
        OperationFingerprint c = new OperationFingerprint(1, 1, OperationTrace.Kind.ALL_SUM, DType.FLOAT32, new int[] {4}, -1, a.history());
        assertThat(s.history()).isEqualTo(a.history());
        assertThat(b.history()).isEqualTo(c.history()).isNotEqualTo(a.history());
        OperationFingerprint other = new OperationFingerprint(0, 0, OperationTrace.Kind.ALL_MAX, DType.FLOAT32, new int[] {4}, -1, 0);
        assertThat(new OperationFingerprint(1, 1, OperationTrace.Kind.ALL_SUM, DType.FLOAT32, new int[] {4}, -1, other.history()).history())
                .isNotEqualTo(c.history());
        assertThat(OperationFingerprint.decode(b.encode(), 0).history()).isEqualTo(b.history());
    }

    @Test
    void allToAllVMatchesWhateverEachRanksCountAndBatchesAreNotCollectives() {
        // every rank of an all_to_all_v sends its own number of rows: the same call, the same history afterwards
        OperationFingerprint r0 = new OperationFingerprint(0, 0, OperationTrace.Kind.ALL_TO_ALL_V, DType.FLOAT32, new int[] {12}, -1, 0);
        OperationFingerprint r1 = new OperationFingerprint(0, 0, OperationTrace.Kind.ALL_TO_ALL_V, DType.FLOAT32, new int[] {15}, -1, 0);
        assertThat(r0.sameCall(r1, true)).isTrue();
        assertThat(r0.history()).isEqualTo(r1.history());
        OperationFingerprint other = new OperationFingerprint(0, 0, OperationTrace.Kind.ALL_TO_ALL_V, DType.INT32, new int[] {12}, -1, 0);
        assertThat(r0.sameCall(other, true)).isFalse();
        OperationFingerprint batch = new OperationFingerprint(1, 1, OperationTrace.Kind.BATCH_SEND_RECV, DType.FLOAT32, new int[] {4}, -1, r0.history());
        assertThat(batch.isCollective()).isFalse();
        assertThat(batch.history()).isEqualTo(r0.history());
    }

    @Test
    void describesTheCallAsMessagesShowIt() {
        assertThat(OperationFingerprint.of(1834, 1834, "all_sum", DType.FLOAT32, new int[] {1024}, -1).describe())
                .isEqualTo("all_sum float32[1024] #1834");
        assertThat(OperationFingerprint.of(3, 1, "send", DType.INT32, new int[] {2, 4}, 3).describe()).isEqualTo("send int32[2,4] to rank 3 #3");
        assertThat(OperationFingerprint.of(4, 1, "recv", DType.INT32, new int[0], 0).describe()).isEqualTo("recv int32[] from rank 0 #4");
        assertThat(OperationFingerprint.of(5, 2, "split", null, null, -1).describe()).isEqualTo("split #5");
    }

    @Test
    void encodesAndDecodesEveryField() {
        OperationFingerprint f = OperationFingerprint.of(77, 70, "all_gather", DType.BFLOAT16, new int[] {3, 5}, -1);
        byte[] b = f.encode();
        assertThat(b).hasSize(OperationFingerprint.BYTES);
        OperationFingerprint g = OperationFingerprint.decode(b, 0);
        assertThat(g.describe()).isEqualTo(f.describe());
        assertThat(g.collective()).isEqualTo(70);
        assertThat(g.sameCall(f, true)).isTrue();
        assertThat(OperationFingerprint.decode(OperationFingerprint.of(1, 0, "recv", DType.UINT8, new int[] {9}, 2).encode(), 0).peer()).isEqualTo(2);
    }

    @Test
    void bytesThatAreNotAFingerprintDecodeToNull() {
        byte[] b = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {4}, -1).encode();
        b[20] ^= 1;   // the checksum no longer matches
        assertThat(OperationFingerprint.decode(b, 0)).isNull();
        assertThat(OperationFingerprint.decode(new byte[64], 0)).isNull();
        assertThat(OperationFingerprint.decode(new byte[10], 0)).isNull();
    }

    @Test
    void shapesOfMoreThanFourAxesCompareWhole() {
        OperationFingerprint a = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {1, 2, 3, 4, 5, 6}, -1);
        OperationFingerprint b = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {1, 2, 3, 4, 6, 5}, -1);
        OperationFingerprint aBack = OperationFingerprint.decode(a.encode(), 0);
        assertThat(aBack.sameCall(a, true)).isTrue();
        assertThat(OperationFingerprint.decode(b.encode(), 0).sameCall(a, true)).as("same axes count and elements, other order").isFalse();
        assertThat(aBack.call()).isEqualTo("all_sum float32[1,2,3,4,…,…]");
    }

    @Test
    void strictComparesShapesOtherwiseElementCounts() {
        OperationFingerprint a = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {2, 3}, -1);
        OperationFingerprint b = OperationFingerprint.of(1, 1, "all_sum", DType.FLOAT32, new int[] {6}, -1);
        assertThat(a.sameCall(b, false)).isTrue();
        assertThat(a.sameCall(b, true)).isFalse();
        assertThat(a.sameCall(OperationFingerprint.of(1, 1, "all_max", DType.FLOAT32, new int[] {2, 3}, -1), false)).isFalse();
        assertThat(a.sameCall(OperationFingerprint.of(1, 1, "all_sum", DType.INT32, new int[] {2, 3}, -1), false)).isFalse();
        assertThat(OperationFingerprint.of(1, 1, "split", null, null, -1).sameCall(OperationFingerprint.of(9, 1, "split", null, null, -1), true)).isTrue();
    }
}
