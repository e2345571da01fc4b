package dev.jdist.nccl;

import dev.jdist.Distributed;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

class NcclBackendTest {

    @Test
    void isAvailableNeverThrowsAndExplainsItselfWhenFalse() {
        NcclBackend b = new NcclBackend();
        assertThatCode(b::isAvailable).doesNotThrowAnyException();
        assertThat(b.unavailableReason().isPresent()).isEqualTo(!b.isAvailable());
        assertThatCode(() -> Distributed.isAvailable("nccl")).doesNotThrowAnyException();
        assertThat(b.name()).isEqualTo("nccl");
    }

    @Test
    void aLibraryOverrideThatDoesNotLoadIsNamedInTheReason() {
        NcclBackend b = new NcclBackend(Map.of("JDIST_NCCL_LIBRARY", "/nonexistent/libnccl.so.2",
                "JDIST_CUDART_LIBRARY", "/nonexistent/libcudart.so.12"));
        assertThat(b.isAvailable()).isFalse();
        assertThat(b.unavailableReason()).get().asString()
                .contains("/nonexistent/libcudart.so.12").contains("JDIST_CUDART_LIBRARY").contains("no such file");
    }

    @Test
    void withoutOverridesTheDefaultSonamesAreTried() {
        NcclBackend b = new NcclBackend(Map.of("JDIST_CUDART_LIBRARY", "libjdist-no-such-cudart.so"));
        assertThat(b.unavailableReason()).get().asString().contains("libjdist-no-such-cudart.so");
        assertThat(NativeLibraries.CUDART_NAMES).containsExactly("libcudart.so.13", "libcudart.so.12", "libcudart.so");
        assertThat(NativeLibraries.NCCL_NAMES).startsWith("libnccl.so.2");
    }
}
