package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostList;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/reference/launcher.md §5.5. */
class MpiLaunchTest {

    @Test
    void hostfileSlots() {
        assertThat(MpiLaunch.hostfile(HostList.parse("a,b", 2))).isEqualTo("a slots=2\nb slots=2\n");
        assertThat(MpiLaunch.hostfile(HostList.parse("hostA,hostB,hostA,hostC,hostB", 1)))
                .isEqualTo("hostA slots=2\nhostB slots=2\nhostC slots=1\n");
        assertThat(MpiLaunch.hostfile(HostList.parse("127.0.0.1", 1))).isEqualTo("127.0.0.1 slots=1\n");
    }

    @Test
    void argvOpenMpi5() {
        List<String> a = MpiLaunch.argv("/usr/bin/mpirun", false, "/tmp/h", "/work",
                List.of(new EnvEntry("A", "1"), new EnvEntry("1X", "2")), List.of("--mca", "btl_tcp_if_include", "en0"),
                List.of("python3", "x.py"));
        assertThat(a).containsExactly("/usr/bin/mpirun", "--output", ":raw", "--hostfile", "/tmp/h", "-cwd", "/work",
                "-x", "A=1", "-x", "1X=2", "--mca", "btl_tcp_if_include", "en0", "--", "python3", "x.py");
        assertThat(MpiLaunch.argv("m", false, "h", null, List.of(), List.of(), List.of("x")))
                .containsExactly("m", "--output", ":raw", "--hostfile", "h", "--", "x");
    }

    @Test
    void theTokenAndDumpDirectoryReachTheRanksByNameNeverAsValuesOnTheCommandLine() {
        var open = MpiLaunch.jdistVariables("t0k", "/tmp/jdist-job-x", List.of(), true, false);
        assertThat(open.environment()).containsExactly(Map.entry("JDIST_JOB_TOKEN", "t0k"), Map.entry("JDIST_DUMP_DIR", "/tmp/jdist-job-x"));
        assertThat(open.forwardedNames()).containsExactly("JDIST_JOB_TOKEN", "JDIST_DUMP_DIR");
        assertThat(MpiLaunch.argv("m", true, "h", null, List.of(new EnvEntry("MLX_MPI_LIBNAME", "libmpi.so.40")),
                open.forwardedNames(), List.of("--oversubscribe"), List.of("x")))
                .containsExactly("m", "--hostfile", "h", "-x", "MLX_MPI_LIBNAME=libmpi.so.40", "-x", "JDIST_JOB_TOKEN",
                        "-x", "JDIST_DUMP_DIR", "--oversubscribe", "--", "x");
        // MPICH's mpiexec passes its environment on and rejects -x
        var mpich = MpiLaunch.jdistVariables("t0k", "/d", List.of(), false, false);
        assertThat(mpich.environment()).containsOnlyKeys("JDIST_JOB_TOKEN", "JDIST_DUMP_DIR");
        assertThat(mpich.forwardedNames()).isEmpty();
        // --mlx-compatible: no token, and MLX's command line exactly
        var compatible = MpiLaunch.jdistVariables(null, "/d", List.of(), true, true);
        assertThat(compatible.environment()).containsExactly(Map.entry("JDIST_DUMP_DIR", "/d"));
        assertThat(compatible.forwardedNames()).isEmpty();
        // a variable MLX's entries already pass (hostfile envs, --env) is left to them
        var given = MpiLaunch.jdistVariables("t", "/d", List.of(new EnvEntry("JDIST_DUMP_DIR", "/shared")), true, false);
        assertThat(given.environment()).containsOnlyKeys("JDIST_JOB_TOKEN");
        assertThat(given.forwardedNames()).containsExactly("JDIST_JOB_TOKEN");
        assertThat(MpiLaunch.isOpenMpi("mpirun (Open MPI) 5.0.3")).isTrue();
        assertThat(MpiLaunch.isOpenMpi("HYDRA build details:\n    Version: 4.1")).isFalse();
    }

    @Test
    void argvOpenMpi4() {
        assertThat(MpiLaunch.argv("m", true, "h", "/d", List.of(new EnvEntry("A", "")), List.of(), List.of("x")))
                .containsExactly("m", "--hostfile", "h", "-wdir", "/d", "-x", "A=", "--", "x");
        assertThat(MpiLaunch.isOpenMpi4("mpirun (Open MPI) 4.1.4\n\nReport bugs to ...")).isTrue();
        assertThat(MpiLaunch.isOpenMpi4("mpirun (Open MPI) 5.0.3")).isFalse();
        assertThat(MpiLaunch.isOpenMpi4("HYDRA build details: Version: 4.1")).isFalse();
    }

    @Test
    void mpiArgWords() {
        assertThat(MpiLaunch.mpiArgWords(List.of("--mca btl_tcp_if_include en0"))).containsExactly("--mca", "btl_tcp_if_include", "en0");
        assertThat(MpiLaunch.mpiArgWords(List.of("-x 'Q=a b'"))).containsExactly("-x", "Q=a b");
        assertThat(MpiLaunch.mpiArgWords(List.of("\"a \\\"b\\\" $c\" d\\ e", "--allow-run-as-root")))
                .containsExactly("a \"b\" $c", "d e", "--allow-run-as-root");
        assertThatThrownBy(() -> MpiLaunch.mpiArgWords(List.of("-x 'Q=a"))).isInstanceOf(CliFailure.class)
                .hasMessageContaining("--mpi-arg").hasMessageContaining("unterminated");
    }

    @Test
    void libraryName() {
        assertThat(MpiLaunch.libraryName("\t@rpath/libmpi.40.dylib (compatibility version 81.0.0)\n")).contains("libmpi.40.dylib");
        assertThat(MpiLaunch.libraryName("\tlinux-vdso.so.1 (0x00007ffd)\n\tlibmpi.so.40 => /usr/lib/x86_64-linux-gnu/libmpi.so.40 (0x00007f)\n"))
                .contains("libmpi.so.40");
        assertThat(MpiLaunch.libraryName("libc.so.6 => /lib/libc.so.6\n")).isEmpty();
    }
}
