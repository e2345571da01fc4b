package dev.jdist.bench;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SizeSweepTest {
    @Test
    void parsesBinaryUnits() {
        assertThat(SizeSweep.parseSize("4B")).isEqualTo(4);
        assertThat(SizeSweep.parseSize("64KiB")).isEqualTo(65536);
        assertThat(SizeSweep.parseSize("1M")).isEqualTo(1 << 20);
        assertThat(SizeSweep.parseSize("2GiB")).isEqualTo(2L << 30);
        assertThat(SizeSweep.parseSize("17")).isEqualTo(17);
    }

    @Test
    void sweepMultipliesByTheFactorAndEndsAtMax() {
        assertThat(SizeSweep.parse("4B:64B", 2)).containsExactly(4L, 8L, 16L, 32L, 64L);
        assertThat(SizeSweep.parse("4B:100B", 4)).containsExactly(4L, 16L, 64L, 100L);
        assertThat(SizeSweep.parse("1MiB", 2)).containsExactly(1L << 20);
    }

    @Test
    void badRangesNameTheProblem() {
        assertThatThrownBy(() -> SizeSweep.parse("4X:8B", 2)).hasMessageContaining("4X").hasMessageContaining("MiB");
        assertThatThrownBy(() -> SizeSweep.parse("8B:4B", 2)).hasMessageContaining("MIN <= MAX");
        assertThatThrownBy(() -> SizeSweep.parse("4B:8B", 1)).hasMessageContaining("--factor");
    }

    @Test
    void formatsSizes() {
        assertThat(SizeSweep.format(4)).isEqualTo("4B");
        assertThat(SizeSweep.format(1 << 20)).isEqualTo("1MiB");
        assertThat(SizeSweep.format(3 << 10)).isEqualTo("3KiB");
    }
}
