package dev.jdist.launch;

import dev.jdist.testing.ClusterCheck;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jdist launch --launcher local}: every rank a process on this machine, whatever its host entry, the entries'
 * addresses still the ring's. Here hosts 127.0.0.2 and 127.0.0.3 (which {@code ssh} would otherwise reach) form a
 * 4-rank ring of the check program, and an {@code ssh} on PATH that fails proves no rank went through it.
 */
@Timeout(240)
class LocalPlacementIT {

    private static final Duration T = Duration.ofSeconds(150);

    @Test
    void everyRankRunsHereWithTheHostEntriesAddressesAsTheRingsAddresses(@TempDir Path dir) throws Exception {
        Path fakeSsh = dir.resolve("ssh");
        Files.writeString(fakeSsh, "#!/bin/sh\necho 'ssh must not be used' >&2\nexit 255\n");
        Files.setPosixFilePermissions(fakeSsh, PosixFilePermissions.fromString("rwxr-xr-x"));
        Map<String, String> env = Map.of("PATH", dir + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin"),
                "JDIST_LAUNCH_BACKEND", "ring", "JDIST_TIMEOUT", "60");
        int port = FreePorts.block(4);

        CommandResult dry = JdistCli.launch(T, env, null, null, "--launcher", "local", "--hosts", "127.0.0.2,127.0.0.3", "-n", "2",
                "-p", "" + port, "--dry-run", "--", "true");
        assertThat(dry.exitCode()).as(dry.toString()).isZero();
        assertThat(dry.stdout()).contains("rank 0 on 127.0.0.2 (local: --launcher local)")
                .contains("rank 3 on 127.0.0.3 (local: --launcher local)");

        CommandResult r = JdistCli.launch(T, env, null, null, "--launcher", "local", "--hosts", "127.0.0.2,127.0.0.3", "-n", "2",
                "-p", "" + port, "--class-path", ClusterCheck.classPath(), ClusterCheck.mainClass());
        assertThat(r.exitCode()).as(r.toString()).isZero();
        ClusterCheck.assertEveryRankOk(r.stdout(), 4, "ring", "mlx-variables");
        assertThat(r.stderr()).doesNotContain("ssh must not be used");
    }
}
