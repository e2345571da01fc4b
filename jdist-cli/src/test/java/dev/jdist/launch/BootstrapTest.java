package dev.jdist.launch;

import dev.jdist.hosts.HostList;
import dev.jdist.testing.CommandResult;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** docs/reference/launcher.md §6.2: the bootstrap runs unchanged under POSIX shells and passes everything verbatim. */
class BootstrapTest {

    @ParameterizedTest
    @ValueSource(strings = {"/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/zsh"})
    void bootstrapUnderEachShell(String shell, @TempDir Path dir) throws Exception {
        Requirements.require(() -> Files.isExecutable(Path.of(shell)) ? Optional.empty()
                : Optional.of(shell + " is not installed (Debian package " + Path.of(shell).getFileName() + "; bin/test installs it)"));
        RankPlan plan = new RankPlan(2, HostList.parse("127.0.0.1", 1).get(0),
                List.of(new EnvEntry("A", "$HOME x"), new EnvEntry("B", "it's \"q\" \\n `x`"), new EnvEntry("1X", "skip")),
                List.of(new RankPlan.FileVar("MLX_HOSTFILE", "[[\"a\\\\b\", null]]")), false);
        Path out = dir.resolve("out");
        String boot = Bootstrap.script(plan, List.of("/bin/sh", "-c",
                "printf '%s|%s|%s|%s|' \"$A\" \"$B\" \"$MLX_RANK\" \"$(pwd)\"; cat \"$MLX_HOSTFILE\"; printf '%s\\n' \"$1\"", "sh",
                "a b*'c"), dir.toString(), true, false);
        CommandResult r = CommandResult.run(Duration.ofSeconds(20), null, Map.of(), null, List.of(shell, "-c", boot));
        assertThat(r.exitCode()).as(r.toString()).isZero();
        String[] lines = r.stdout().split("\n");
        assertThat(lines[0]).startsWith(Bootstrap.HANDSHAKE);
        Path pidFile = Path.of(lines[0].substring(Bootstrap.HANDSHAKE.length()));
        assertThat(Files.readString(pidFile).trim()).matches("[0-9]+");
        Files.deleteIfExists(pidFile);
        assertThat(lines[1]).isEqualTo("$HOME x|it's \"q\" \\n `x`|2|" + dir + "|[[\"a\\\\b\", null]]");
        assertThat(lines[2]).isEqualTo("a b*'c");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/zsh"})
    void bindToCorePinsTheProgramToItsSlotModuloTheCpus(String shell) {
        Requirements.require(() -> Files.isExecutable(Path.of(shell)) ? Optional.empty()
                : Optional.of(shell + " is not installed (Debian package " + Path.of(shell).getFileName() + "; bin/test installs it)"));
        RankPlan plan = new RankPlan(1, HostList.parse("127.0.0.1", 2).get(1), List.of(), List.of(), false);
        int cpus = Runtime.getRuntime().availableProcessors();
        String boot = Bootstrap.script(plan, List.of("/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status; echo \"$1\"", "sh", "a b"),
                null, false, false, cpus + 1);
        CommandResult r = CommandResult.run(Duration.ofSeconds(20), null, Map.of(), null, List.of(shell, "-c", boot));
        assertThat(r.exitCode()).as(r.toString()).isZero();
        String[] lines = r.stdout().split("\n");
        assertThat(lines[1]).matches("Cpus_allowed_list:\\s+" + (cpus + 1) % cpus);
        assertThat(lines[2]).isEqualTo("a b");

        // no taskset on PATH: a warning naming the rank, and the program still runs (unbound)
        CommandResult unbound = CommandResult.run(Duration.ofSeconds(20), null, Map.of("PATH", "/nonexistent"), null,
                List.of(shell, "-c", boot));
        assertThat(unbound.stderr()).contains("--bind-to core: taskset or nproc is missing on this host; rank 1 runs unbound");
    }

    /** A reduced PATH (a common way to pick an MPI) reaches the program unchanged and does not break the launcher's steps. */
    @ParameterizedTest
    @ValueSource(strings = {"/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/zsh"})
    void aReducedPathReachesTheProgramAndTheLaunchersToolsStillWork(String shell, @TempDir Path dir) throws Exception {
        Requirements.require(() -> Files.isExecutable(Path.of(shell)) ? Optional.empty()
                : Optional.of(shell + " is not installed (Debian package " + Path.of(shell).getFileName() + "; bin/test installs it)"));
        RankPlan plan = new RankPlan(0, HostList.parse("127.0.0.1", 1).get(0), List.of(),
                List.of(new RankPlan.FileVar("MLX_HOSTFILE", "[]")), false);
        String boot = Bootstrap.script(plan, List.of("/bin/sh", "-c", "printf '%s|%s\\n' \"$PATH\" \"$MLX_HOSTFILE\""), dir.toString(), true, false);
        CommandResult r = CommandResult.run(Duration.ofSeconds(20), null, Map.of("PATH", "/opt/my-mpi/bin"), null, List.of(shell, "-c", boot));
        assertThat(r.exitCode()).as(r.toString()).isZero();
        String[] lines = r.stdout().split("\n");
        Path pidFile = Path.of(lines[0].substring(Bootstrap.HANDSHAKE.length()));
        assertThat(Files.readString(pidFile).trim()).matches("[0-9]+");
        assertThat(lines[1]).startsWith("/opt/my-mpi/bin|/");
        Files.deleteIfExists(Path.of(lines[1].substring(lines[1].indexOf('|') + 1)));

        Process p = new ProcessBuilder("setsid", "sh", "-c", "sleep 60").start();
        Files.writeString(pidFile, p.pid() + "\n");
        CommandResult k = CommandResult.run(Duration.ofSeconds(30), null, Map.of("PATH", "/opt/my-mpi/bin"), null,
                List.of(shell, "-c", Bootstrap.killScript(pidFile.toString(), 1)));
        assertThat(k.stdout().trim()).as(k.toString()).isEqualTo("1");
        assertThat(p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(Files.exists(pidFile)).isFalse();
    }

    @Test
    void missingCwdIsReportedAndTheRankStillRuns() {
        RankPlan plan = new RankPlan(0, HostList.parse("127.0.0.1", 1).get(0), List.of(), List.of(), true);
        String boot = Bootstrap.script(plan, List.of("/bin/echo", "ran"), "/no/such/dir", true, false);
        CommandResult r = CommandResult.run(Duration.ofSeconds(20), null, Map.of("MLX_HOSTFILE", "/x"), null,
                List.of("/bin/sh", "-c", boot + ""));
        assertThat(r.stderr()).contains("Failed to change directory to /no/such/dir");
        assertThat(r.stdout()).contains("ran");
        String silent = Bootstrap.script(plan, List.of("/bin/sh", "-c", "echo ${MLX_HOSTFILE:-unset}"), "/no/such/dir", false, false);
        CommandResult r2 = CommandResult.run(Duration.ofSeconds(20), null, Map.of("MLX_HOSTFILE", "/x"), null,
                List.of("/bin/sh", "-c", silent));
        assertThat(r2.stderr()).isEmpty();
        assertThat(r2.stdout()).contains("unset");
    }

    @Test
    void killScriptKillsTheProcessAndItsGroup(@TempDir Path dir) throws Exception {
        Process p = new ProcessBuilder("setsid", "sh", "-c", "sleep 60 & sleep 60").start();
        Path pf = dir.resolve("pid");
        Files.writeString(pf, p.pid() + "\n");
        CommandResult r = CommandResult.run(Duration.ofSeconds(30), "/bin/sh", "-c", Bootstrap.killScript(pf.toString(), 1));
        assertThat(r.stdout().trim()).isEqualTo("1");
        assertThat(p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(Files.exists(pf)).isFalse();
        CommandResult again = CommandResult.run(Duration.ofSeconds(30), "/bin/dash", "-c", Bootstrap.killScript(pf.toString(), 1));
        assertThat(again.stdout().trim()).isEqualTo("0");
    }
}
