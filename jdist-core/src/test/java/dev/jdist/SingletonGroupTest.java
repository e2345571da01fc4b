package dev.jdist;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SingletonGroupTest {

    @AfterEach
    void reset() { Distributed.reset(); }

    @Test
    void nonStrictInitWithoutEnvironmentGivesTheOneRankGroupWhoseCollectivesReturnTheirInput() {
        Group g = Distributed.init(false, "any", Map.of());
        assertThat(g.rank()).isZero();
        assertThat(g.size()).isEqualTo(1);
        Array x = Array.ones(DType.FLOAT32, 10);
        assertThat(g.allSum(x)).isSameAs(x);
        assertThat(g.allGather(x)).isSameAs(x);
        assertThat(g.sumScatter(x)).isSameAs(x);
        assertThatThrownBy(() -> g.send(x, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> g.split(0)).isInstanceOf(UnsupportedCollectiveException.class);
    }

    @Test
    void unknownBackendNameIsAnArgumentErrorListingTheValidNames() {
        assertThatThrownBy(() -> Distributed.init(false, "tcp", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tcp").hasMessageContaining("ring").hasMessageContaining("nccl");
    }

    @Test
    void onesPrintsLikeMlx() {
        assertThat(Array.full(DType.FLOAT32, 4, 10).toString()).isEqualTo("array([4, 4, 4, ..., 4, 4, 4], dtype=float32)");
    }
}
