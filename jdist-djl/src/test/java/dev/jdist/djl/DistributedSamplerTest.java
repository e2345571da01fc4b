package dev.jdist.djl;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DistributedSamplerTest {

    @Test
    void ranksGetDisjointEqualShardsThatCoverTheDataset() {
        int n = 4;
        List<Long> all = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            List<Long> mine = new DistributedSampler(r, n, 42, true).indices(100);
            assertThat(mine).hasSize(25);
            all.addAll(mine);
        }
        assertThat(new HashSet<>(all)).hasSize(100);
    }

    @Test
    void unevenSizesArePaddedFromTheHeadSoEveryRankTakesTheSameSteps() {
        Set<Long> seen = new HashSet<>();
        int total = 0;
        for (int r = 0; r < 4; r++) {
            List<Long> mine = new DistributedSampler(r, 4, 1, true).indices(10);
            assertThat(mine).hasSize(3);
            seen.addAll(mine);
            total += mine.size();
        }
        assertThat(total).isEqualTo(12);
        assertThat(seen).hasSize(10);
        assertThat(new DistributedSampler(1, 4, 0, false).indices(10)).containsExactly(1L, 5L, 9L);
        assertThat(new DistributedSampler(3, 4, 0, false).indices(10)).containsExactly(3L, 7L, 1L);
    }

    @Test
    void everyEpochReshufflesTheSameWayOnEveryRankAndOneRankGetsAPermutation() {
        DistributedSampler a = new DistributedSampler(0, 1, 9, true);
        DistributedSampler b = new DistributedSampler(0, 1, 9, true);
        List<Long> e0 = a.indices(50), e1 = a.indices(50);
        assertThat(e0).isNotEqualTo(e1);
        assertThat(new HashSet<>(e0)).hasSize(50);
        assertThat(b.indices(50)).isEqualTo(e0);
        b.setEpoch(1);
        assertThat(b.indices(50)).isEqualTo(e1);
        assertThat(b.epoch()).isEqualTo(2);
    }

    @Test
    void theBatchSamplerCutsOnlyThisRanksShardSoAnEpochHasNoEmptyBatches() {
        DistributedBatchSampler b = new DistributedBatchSampler(new DistributedSampler(1, 4, 3, true), 64, false);
        List<List<Long>> batches = b.batches(new DistributedSampler(1, 4, 3, true).indices(1437));
        assertThat(batches).hasSize(6);
        assertThat(batches.subList(0, 5)).allSatisfy(x -> assertThat(x).hasSize(64));
        assertThat(batches.get(5)).hasSize(360 - 5 * 64);
        assertThat(new DistributedBatchSampler(new DistributedSampler(1, 4, 3, true), 64, true).batches(
                new DistributedSampler(1, 4, 3, true).indices(1437))).hasSize(5);
        assertThat(b.getBatchSize()).isEqualTo(64);
    }

    @Test
    void badRanksAreRejected() {
        assertThatThrownBy(() -> new DistributedSampler(4, 4, 0, true)).hasMessageContaining("rank must be in 0..3");
    }
}
