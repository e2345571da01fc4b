package dev.jdist.mpi;

import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.ReduceOp;

import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Library discovery and "not configured" without starting MPI (no {@code MPI_Init} in this JVM). */
class MpiBackendTest {

    @AfterEach
    void reset() { Distributed.reset(); }

    @Test
    void mlxMpiLibnameWinsOverMpiLibnameAndIsTheOnlyCandidate() {
        var c = MpiLibraryLocator.candidates(Map.of("MLX_MPI_LIBNAME", "/opt/x/libmpi.so", "MPI_LIBNAME", "other"), "Linux");
        assertThat(c.names()).containsExactly("/opt/x/libmpi.so");
        assertThat(c.variable()).isEqualTo("MLX_MPI_LIBNAME");
        var d = MpiLibraryLocator.candidates(Map.of("MPI_LIBNAME", " libmpich.so.12 "), "Linux");
        assertThat(d.names()).containsExactly("libmpich.so.12");
        assertThat(d.variable()).isEqualTo("MPI_LIBNAME");
    }

    @Test
    void defaultSearchTriesOpenMpiThenMpichSonamesOnLinuxAndDylibsOnMacOs() {
        var linux = MpiLibraryLocator.candidates(Map.of(), "Linux").names();
        assertThat(linux).containsSubsequence("libmpi.so.40", "libmpi.so.12", "libmpich.so.12", "libmpi.so");
        var mac = MpiLibraryLocator.candidates(Map.of(), "Mac OS X").names();
        assertThat(mac).containsSubsequence("libmpi.40.dylib", "libmpi.12.dylib", "libmpi.dylib");
        assertThat(mac).allMatch(n -> n.endsWith(".dylib"));
    }

    @Test
    void theLauncherFamilyPicksWhichLibraryIsTriedFirst() {
        var hydra = MpiLibraryLocator.candidates(Map.of("PMI_RANK", "0", "PMI_SIZE", "2"), "Linux").names();
        assertThat(hydra.getFirst()).isEqualTo("libmpi.so.12");
        assertThat(hydra.indexOf("libmpich.so.12")).isLessThan(hydra.indexOf("libmpi.so.40"));
        var ompi = MpiLibraryLocator.candidates(Map.of("OMPI_COMM_WORLD_SIZE", "2", "PMI_RANK", "0"), "Linux").names();
        assertThat(ompi.getFirst()).isEqualTo("libmpi.so.40");
    }

    @Test
    void onlyAnMpiLauncherCountsAsStartedByOne() {
        assertThat(MpiLibraryLocator.startedByLauncher(Map.of())).isFalse();
        assertThat(MpiLibraryLocator.startedByLauncher(Map.of("MLX_RANK", "0"))).isFalse();
        assertThat(MpiLibraryLocator.startedByLauncher(Map.of("OMPI_COMM_WORLD_SIZE", "2"))).isTrue();
        assertThat(MpiLibraryLocator.startedByLauncher(Map.of("PMI_SIZE", "2"))).isTrue();
        assertThat(MpiLibraryLocator.startedByLauncher(Map.of("PMIX_RANK", "1"))).isTrue();
        assertThat(MpiLibraryLocator.startedByLauncher(Map.of("JDIST_MPI_INIT", "1"))).isTrue();
    }

    @Test
    void withoutALauncherNonStrictInitIsEmptySoAnyFallsThroughToTheSingleton() {
        assertThat(new MpiBackend().init(false, Map.of())).isEmpty();
        assertThat(new MpiBackend().init(false, Map.of("MLX_MPI_LIBNAME", "/nonexistent/libmpi.so.99"))).isEmpty();
        var g = Distributed.init(false, "mpi", Map.of());
        assertThat(g.size()).isEqualTo(1);
        assertThat(g.backend()).isEqualTo("singleton");
    }

    @Test
    void aBadMlxMpiLibnameIsAConfigErrorNamingTheVariableThePathAndTheFix() {
        assertThatThrownBy(() -> new MpiBackend().init(true, Map.of("MLX_MPI_LIBNAME", "/nonexistent/libmpi.so.99")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MLX_MPI_LIBNAME=/nonexistent/libmpi.so.99")
                .hasMessageContaining("unset it");
        assertThatThrownBy(() -> Distributed.init(true, "mpi", Map.of("MPI_LIBNAME", "/nonexistent/libmpich.so")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MPI_LIBNAME=/nonexistent/libmpich.so");
    }

    @Test
    void aLibraryThatIsNotMpiIsRejectedByName() {
        var libc = Requirements.findLibrary("libc.so.6");
        org.junit.jupiter.api.Assumptions.assumeTrue(libc.isPresent(), "no libc.so.6 on this system");
        assertThatThrownBy(() -> new MpiBackend().init(true, Map.of("MLX_MPI_LIBNAME", libc.get().toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MPI_Get_library_version")
                .hasMessageContaining("not an MPI library");
    }

    @Test
    void openMpiIsRecognisedWithPointerHandlesAndStrictInitWithoutALauncherSaysToUseMpirun() {
        var lib = Requirements.findLibrary("libmpi.so.40");
        Requirements.require(lib.isPresent(),
                "Open MPI (libmpi.so.40) is not installed (Debian: libopenmpi3; bin/test installs it when run as root)");
        MpiLibrary l = MpiRuntime.library(Map.of("MLX_MPI_LIBNAME", lib.get().toString()));
        assertThat(l.abi).isInstanceOf(OpenMpiAbi.class);
        assertThat(l.version).contains("Open MPI");
        assertThat(l.abi.commWorld()).isNotZero();
        assertThat(l.abi.datatype(DType.FLOAT32)).isNotEqualTo(l.abi.datatype(DType.FLOAT64));
        assertThatThrownBy(() -> new MpiBackend().init(true, Map.of("MLX_MPI_LIBNAME", lib.get().toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("one process").hasMessageContaining("mpirun");
    }

    @Test
    void mpichIsRecognisedWithIntegerHandles() {
        var lib = Requirements.findLibrary("libmpich.so.12");
        Requirements.require(lib.isPresent(),
                "MPICH (libmpich.so.12) is not installed (Debian: libmpich12; bin/test installs it when run as root)");
        MpiLibrary l = MpiRuntime.library(Map.of("MLX_MPI_LIBNAME", lib.get().toString()));
        assertThat(l.abi).isInstanceOf(MpichAbi.class);
        assertThat(l.version).contains("MPICH");
        assertThat(l.abi.commWorld()).isEqualTo(0x44000000L);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(8);
            l.abi.writeHandle(h, MpichAbi.MPI_FLOAT);
            assertThat(l.abi.readHandle(h)).isEqualTo(MpichAbi.MPI_FLOAT);
        }
    }

    @Test
    void afterLoadingMpiANullPointerIsStillAnExceptionNotACrash() {
        var ompi = Requirements.findLibrary("libmpi.so.40");
        var mpich = Requirements.findLibrary("libmpich.so.12");
        Requirements.require(ompi.isPresent() || mpich.isPresent(),
                "neither Open MPI nor MPICH is installed (bin/test installs both when run as root)");
        ompi.ifPresent(p -> MpiRuntime.library(Map.of("MLX_MPI_LIBNAME", p.toString())));
        mpich.ifPresent(p -> MpiRuntime.library(Map.of("MLX_MPI_LIBNAME", p.toString())));
        int caught = 0;
        for (int i = 0; i < 20_000; i++) {   // enough for the JIT to compile the implicit null check
            try {
                caught += lengthOf(i % 1000 == 999 ? null : "x") > 0 ? 0 : 1;
            } catch (NullPointerException e) {
                caught++;
            }
        }
        assertThat(caught).isEqualTo(20);
    }

    private static int lengthOf(String s) { return s.length(); }

    @Test
    void userOpsCoverWhatMpiLacksOrGetsWrong() {
        assertThat(MpiUserOps.needsUserOp(DType.FLOAT16, ReduceOp.SUM, false)).isTrue();
        assertThat(MpiUserOps.needsUserOp(DType.BFLOAT16, ReduceOp.MIN, false)).isTrue();
        assertThat(MpiUserOps.needsUserOp(DType.BOOL, ReduceOp.SUM, false)).isTrue();
        assertThat(MpiUserOps.needsUserOp(DType.COMPLEX64, ReduceOp.SUM, false)).isFalse();
        assertThat(MpiUserOps.needsUserOp(DType.COMPLEX64, ReduceOp.MAX, false)).isTrue();
        assertThat(MpiUserOps.needsUserOp(DType.UINT64, ReduceOp.MIN, false)).isTrue();
        assertThat(MpiUserOps.needsUserOp(DType.UINT64, ReduceOp.SUM, true)).isFalse();
        assertThat(MpiUserOps.needsUserOp(DType.INT8, ReduceOp.SUM, true)).isTrue();
        assertThat(MpiUserOps.needsUserOp(DType.INT8, ReduceOp.SUM, false)).isFalse();
        assertThat(MpiUserOps.needsUserOp(DType.FLOAT32, ReduceOp.MAX, true)).isFalse();
    }

    @Test
    void theUpcallReducesInPlaceAndNeverLetsAnExceptionEscape() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(4), inout = arena.allocate(4), len = arena.allocate(ValueLayout.JAVA_INT);
            len.set(ValueLayout.JAVA_INT, 0, 2);
            in.set(ValueLayout.JAVA_SHORT_UNALIGNED, 0, Float.floatToFloat16(1.5f));
            in.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2, Float.floatToFloat16(-2f));
            inout.set(ValueLayout.JAVA_SHORT_UNALIGNED, 0, Float.floatToFloat16(2f));
            inout.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2, Float.floatToFloat16(3f));
            MpiUserOps.applyForTest(ReduceOp.SUM, DType.FLOAT16, in, inout, len);
            assertThat(MpiUserOps.takeFailure()).isNull();
            assertThat(Float.float16ToFloat(inout.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0))).isEqualTo(3.5f);
            assertThat(Float.float16ToFloat(inout.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2))).isEqualTo(1f);

            MpiUserOps.applyForTest(ReduceOp.MAX, null, in, inout, len);   // fails inside: recorded, not thrown
            assertThat(MpiUserOps.takeFailure()).isInstanceOf(NullPointerException.class);
            assertThat(MpiUserOps.takeFailure()).isNull();
        }
    }
}
