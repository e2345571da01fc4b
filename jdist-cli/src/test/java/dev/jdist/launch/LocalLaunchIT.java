package dev.jdist.launch;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Real local jobs through the built CLI: output, stdin, failures, signals, options (docs/reference/launcher.md §6–§8). */
@Timeout(180)
class LocalLaunchIT {

    private static final Duration T = Duration.ofSeconds(120);
    private static final Map<String, String> RING = Map.of("JDIST_LAUNCH_BACKEND", "ring");

    @Test
    void everyLineOfEveryRankArrives() {
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "4", "--",
                "sh", "-c", "i=0; while [ $i -lt 300 ]; do echo \"r$MLX_RANK l$i\"; i=$((i+1)); done; echo \"e$MLX_RANK\" >&2");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String> lines = JdistCli.lines(r.stdout());
        assertThat(lines).hasSize(1200);
        for (int rank = 0; rank < 4; rank++) {
            String prefix = "r" + rank + " ";
            List<String> mine = lines.stream().filter(l -> l.startsWith(prefix)).toList();
            assertThat(mine).hasSize(300);
            for (int i = 0; i < 300; i++) {
                assertThat(mine.get(i)).isEqualTo(prefix + "l" + i); // in order within a rank
            }
        }
        assertThat(JdistCli.lines(r.stderr())).contains("e0", "e1", "e2", "e3");
        assertThat(r.stderr()).doesNotContain("[WARN]").doesNotContain(Bootstrap.HANDSHAKE.trim());
    }

    @Test
    void shortLivedRanksLoseNoOutput() {
        for (int attempt = 0; attempt < 3; attempt++) {
            CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "3", "--", "echo", "x");
            assertThat(r.exitCode()).isZero();
            assertThat(JdistCli.lines(r.stdout())).containsExactly("x", "x", "x");
        }
    }

    @Test
    void atFileArgumentsReachTheProgramUntouched(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("args.txt"), "expanded\n");
        CommandResult r = JdistCli.launch(T, RING, null, null, "--", "echo", "@" + f);
        assertThat(r.stdout().trim()).isEqualTo("@" + f);
    }

    @Test
    void singleRankRuns() {
        CommandResult r = JdistCli.launch(T, Map.of("JDIST_LAUNCH_BACKEND", "ring", "MLX_HOSTFILE", "/inherited"), null, null,
                "sh", "-c", "echo \"rank=$MLX_RANK hostfile=${MLX_HOSTFILE:-none}\"");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.stdout().trim()).isEqualTo("rank=0 hostfile=none");
    }

    @Test
    void stdinIsBroadcastAndItsEndReachesEveryRank() {
        CommandResult r = JdistCli.launch(T, RING, "hello\nworld\n", null, "-n", "3", "--", "cat");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String> lines = JdistCli.lines(r.stdout());
        assertThat(lines).hasSize(6);
        assertThat(lines.stream().filter("hello"::equals).count()).isEqualTo(3);
        assertThat(lines.stream().filter("world"::equals).count()).isEqualTo(3);
    }

    @Test
    void aFailingRankEndsTheOthersAndSetsTheExitStatus() throws Exception {
        String mark = JdistCli.sleepMarker();
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "4", "--", "sh", "-c",
                "if [ $MLX_RANK = 2 ]; then sleep 1; echo last words; exit 3; fi; sleep " + mark + " & wait");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
        assertThat(r.stdout()).contains("last words");
        assertThat(r.stderr()).contains("[WARN] Node with rank 2 exited with code 3")
                .contains("[WARN] Node with rank 0 was killed").contains("[WARN] Node with rank 1 was killed")
                .contains("[WARN] Node with rank 3 was killed")
                .contains("job failed: rank 2 on 127.0.0.1 exited with code 3");
        // the ranks' children (the background sleeps) are gone too
        assertThat(JdistCli.await(Duration.ofSeconds(10), () -> JdistCli.processesWith(mark).isEmpty()))
                .as("left over: %s", JdistCli.processesWith(mark)).isTrue();
    }

    @Test
    void aRankIgnoringSigtermIsKilledAfterTheGracePeriod() throws Exception {
        String mark = JdistCli.sleepMarker();
        long t0 = System.nanoTime();
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "2", "--", "sh", "-c",
                "if [ $MLX_RANK = 1 ]; then sleep 1; exit 5; fi; trap '' TERM; while :; do sleep " + mark + "; done");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(5);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(60));
        assertThat(r.stderr()).contains("[WARN] Node with rank 0 was killed");
        assertThat(JdistCli.await(Duration.ofSeconds(10), () -> JdistCli.processesWith(mark).isEmpty())).isTrue();
    }

    @Test
    void sigintAndSigtermEndEveryRank(@TempDir Path dir) throws Exception {
        Requirements.require(Requirements.command("perl", "perl-base"));
        for (String sig : List.of("INT", "TERM")) {
            String mark = JdistCli.sleepMarker();
            Path d = Files.createDirectories(dir.resolve(sig));
            Process p = JdistCli.startLaunch(d, RING, "-n", "3", "--", "sh", "-c", "echo ready; sleep " + mark + " & wait");
            assertThat(JdistCli.await(Duration.ofSeconds(60),
                    () -> JdistCli.lines(JdistCli.read(d.resolve("stdout"))).size() == 3)).isTrue();
            JdistCli.signal(p, sig);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).isEqualTo(sig.equals("INT") ? 130 : 143);
            String err = JdistCli.read(d.resolve("stderr"));
            assertThat(err).contains("[WARN] Node with rank 0 was killed").contains("[WARN] Node with rank 2 was killed")
                    .doesNotContain("Exception");
            assertThat(JdistCli.await(Duration.ofSeconds(10), () -> JdistCli.processesWith(mark).isEmpty()))
                    .as("left over after SIG%s: %s", sig, JdistCli.processesWith(mark)).isTrue();
        }
    }

    @Test
    void cwdAndEnv(@TempDir Path dir) {
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "2", "--cwd", dir.toString(),
                "--env", "A=$HOME x", "--env", "K=v=w", "--env", "1X=2", "--env", "EMPTY", "--",
                "sh", "-c", "echo \"$(pwd)|$A|$K|${EMPTY-unset}|$MLX_RANK\"");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(JdistCli.lines(r.stdout())).containsExactlyInAnyOrder(
                dir + "|$HOME x|v=w||0", dir + "|$HOME x|v=w||1");
        // one warning per invalid entry, not one per rank
        assertThat(r.stderr().split("is an invalid environment variable", -1)).hasSize(2);
        assertThat(r.stderr()).contains("[WARN] '1X=2' is an invalid environment variable so it is ignored");
    }

    @Test
    void missingCwdIsReportedAndTheJobStillRuns() {
        CommandResult r = JdistCli.launch(T, RING, null, null, "--cwd", "/no/such/dir", "--", "echo", "ran");
        assertThat(r.exitCode()).isZero();
        assertThat(r.stderr()).contains("Failed to change directory to /no/such/dir");
        assertThat(r.stdout().trim()).isEqualTo("ran");
    }

    @Test
    void aMissingProgramFailsWith127() {
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "2", "--", "no-such-program-jdist");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(127);
        assertThat(r.stderr()).contains("no-such-program-jdist").contains("not found").contains("exited with code 127");
    }

    @Test
    void timeoutEndsTheJob() {
        String mark = JdistCli.sleepMarker();
        CommandResult r = JdistCli.launch(T, RING, null, null, "--timeout", "2", "-n", "2", "--", "sleep", mark);
        assertThat(r.exitCode()).isEqualTo(124);
        assertThat(r.stderr()).contains("--timeout 2").contains("was killed");
        assertThat(JdistCli.processesWith(mark)).isEmpty();
    }

    @Test
    void tagOutputAndPerRankFiles(@TempDir Path dir) throws Exception {
        Path logs = dir.resolve("logs");
        CommandResult r = JdistCli.launch(T, RING, null, null, "--tag-output", "--output-dir", logs.toString(), "-n", "2", "--",
                "sh", "-c", "echo one; printf two; echo oops >&2");
        assertThat(r.exitCode()).isZero();
        assertThat(JdistCli.lines(r.stdout())).containsExactlyInAnyOrder("[0] one", "[0] two", "[1] one", "[1] two");
        assertThat(JdistCli.lines(r.stderr())).contains("[0] oops", "[1] oops");
        assertThat(Files.readString(logs.resolve("rank-1.out"))).isEqualTo("one\ntwo");
        assertThat(Files.readString(logs.resolve("rank-0.err"))).isEqualTo("oops\n");
        CommandResult ts = JdistCli.launch(T, RING, null, null, "--timestamp-output", "--", "echo", "x");
        assertThat(ts.stdout().trim()).matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} x");
    }

    @Test
    void bindToCorePinsEachLocalRankToItsOwnCpu() {
        int cpus = Runtime.getRuntime().availableProcessors();
        CommandResult r = JdistCli.launch(T, RING, null, null, "--bind-to", "core", "-n", "3", "--",
                "sh", "-c", "echo $MLX_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(JdistCli.lines(r.stdout())).containsExactlyInAnyOrder("0 " + 0 % cpus, "1 " + 1 % cpus, "2 " + 2 % cpus);

        CommandResult dry = JdistCli.launch(T, RING, null, null, "--dry-run", "--bind-to", "core", "-n", "2", "--", "true");
        assertThat(dry.stdout()).contains("  cpu: 0 modulo", "  cpu: 1 modulo");
        CommandResult bad = JdistCli.launch(T, RING, null, null, "--bind-to", "socket", "-n", "2", "--", "true");
        assertThat(bad.exitCode()).isEqualTo(2);
        assertThat(bad.stderr()).contains("--bind-to must be none or core, got 'socket'");
    }

    @Test
    void dryRunStartsNothing() {
        String mark = JdistCli.sleepMarker();
        CommandResult r = JdistCli.launch(T, RING, null, null, "--dry-run", "-n", "2", "--env", "A=1", "--", "sleep", mark);
        assertThat(r.exitCode()).isZero();
        assertThat(r.stdout()).contains("rank 0 on 127.0.0.1 (local)").contains("rank 1 on 127.0.0.1")
                .contains("command: sleep " + mark).contains("env: A=1").contains("env: MLX_RANK=1")
                .contains("env: JDIST_JOB_TOKEN=").contains("MLX_HOSTFILE=<temp file: [[\"127.0.0.1:32323\"], [\"127.0.0.1:32324\"]]>");
        assertThat(JdistCli.processesWith(mark)).isEmpty();
        CommandResult mlx = JdistCli.launch(T, RING, null, null, "--dry-run", "--mlx-compatible", "-n", "2", "--", "true");
        assertThat(mlx.stdout()).doesNotContain("JDIST_JOB_TOKEN");
    }

    @Test
    void everyRankGetsTheSameFreshJobToken() {
        CommandResult a = JdistCli.launch(T, RING, null, null, "-n", "2", "--", "sh", "-c", "echo $JDIST_JOB_TOKEN");
        CommandResult b = JdistCli.launch(T, RING, null, null, "-n", "1", "--", "sh", "-c", "echo $JDIST_JOB_TOKEN");
        List<String> tokens = JdistCli.lines(a.stdout());
        assertThat(tokens).hasSize(2);
        assertThat(tokens.get(0)).matches("[0-9a-f]{32}").isEqualTo(tokens.get(1));
        assertThat(b.stdout().trim()).matches("[0-9a-f]{32}").isNotEqualTo(tokens.get(0));
    }

    @Test
    void usageErrorsExit2AndHelpAndPrintJava() {
        CommandResult r = JdistCli.launch(T, "--hosts", "a,,b", "x");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.stderr()).startsWith("usage: jdist launch").contains("jdist launch: error: Hostname cannot be empty");
        assertThat(JdistCli.launch(T, "--").stderr()).contains("No script is provided");
        assertThat(JdistCli.launch(T, "--backend", "gloo", "x").stderr())
                .contains("The backend should be one of {'ring', 'mpi', 'nccl', 'jaccl', 'jaccl-ring'}");
        CommandResult help = JdistCli.launch(T, "python", "x.py", "--help");
        assertThat(help.exitCode()).isZero();
        assertThat(help.stdout()).contains("--hostfile").contains("--print-java");
        CommandResult pj = JdistCli.launch(T, "--print-java");
        assertThat(pj.stdout().trim()).isEqualTo(JdistCli.java());
        assertThat(JdistCli.launch(T, "--hosts", "node1,node2", "x").stderr())
                .contains("The ring backend requires IPs to be provided instead of hostnames");
    }

    @Test
    void mpiBackendWrapsMpirun(@TempDir Path dir) throws Exception {
        String jdistNames = "<-x><JDIST_JOB_TOKEN><-x><JDIST_DUMP_DIR>";
        for (String version : List.of("5.0.3", "4.1.4")) {
            Path bin = Files.createDirectories(dir.resolve("bin" + version));
            Path shim = bin.resolve("mpirun");
            Files.writeString(shim, """
                    #!/bin/sh
                    if [ "$1" = "--version" ]; then echo "mpirun (Open MPI) %s"; exit 0; fi
                    for a in "$@"; do printf '<%%s>' "$a"; done; echo
                    echo "TOKEN=${JDIST_JOB_TOKEN:+set} DUMP=${JDIST_DUMP_DIR:+set}"
                    while [ $# -gt 0 ]; do if [ "$1" = "--hostfile" ]; then cat "$2"; echo "HOSTFILE=$2"; fi; shift; done
                    exit 7
                    """.formatted(version));
            Files.setPosixFilePermissions(shim, PosixFilePermissions.fromString("rwxr-xr-x"));
            Map<String, String> env = Map.of("PATH", bin + ":" + System.getenv("PATH"));
            CommandResult r = JdistCli.launch(T, env, null, null, "--backend", "mpi", "--hosts", "a,b", "-n", "2", "--cwd", "/w",
                    "--env", "A=1", "--mpi-arg", "--mca btl tcp", "--mpi-arg", "--allow-run-as-root", "--", "python3", "x.py");
            assertThat(r.exitCode()).as(r.toString()).isEqualTo(7);
            String argv = r.stdout().lines().findFirst().orElseThrow();
            if (version.startsWith("5")) {
                // discovery entries (DYLD_LIBRARY_PATH, MLX_MPI_LIBNAME) may precede A=1 when ompi_info is installed
                assertThat(argv).startsWith("<--output><:raw><--hostfile><").contains("><-cwd></w><-x><")
                        .endsWith("<-x><A=1>" + jdistNames + "<--mca><btl><tcp><--allow-run-as-root><--><python3><x.py>");
            } else {
                assertThat(argv).startsWith("<--hostfile><").contains("><-wdir></w><-x><").doesNotContain("--output")
                        .endsWith("<-x><A=1>" + jdistNames + "<--mca><btl><tcp><--allow-run-as-root><--><python3><x.py>");
            }
            // [jdist] (launcher.md §5.5): Open MPI forwards jdist's variables by name; their values travel in mpirun's environment
            assertThat(r.stdout()).contains("TOKEN=set DUMP=set");
            assertThat(r.stdout()).contains("a slots=2\nb slots=2\n");
            String hostfile = r.stdout().lines().filter(l -> l.startsWith("HOSTFILE=")).findFirst().orElseThrow().substring(9);
            assertThat(Files.exists(Path.of(hostfile))).as("temporary hostfile deleted").isFalse();
        }
        Path empty = Files.createDirectories(dir.resolve("empty"));
        CommandResult none = JdistCli.launch(T, Map.of("PATH", empty.toString()), null, null, "--backend", "mpi", "x");
        assertThat(none.exitCode()).isEqualTo(1);
        assertThat(none.stderr()).contains("mpirun not found on PATH");
    }

    @Test
    void javaSourceFileRanksGetJdistAndTheJvmFlags() throws Exception {
        Path allSum = JdistCli.repoRoot().resolve("examples/AllSum.java");
        int port = FreePorts.block(4);
        CommandResult r = JdistCli.launch(Duration.ofSeconds(170), RING, null, null, "-n", "4", "-p", Integer.toString(port),
                allSum.toString());
        assertThat(r.exitCode()).as(r.toString()).isZero();
        List<String> lines = JdistCli.lines(r.stdout());
        assertThat(lines).hasSize(4);
        assertThat(lines).allSatisfy(l -> assertThat(l).endsWith(" array([4, 4, 4, ..., 4, 4, 4], dtype=float32)"));
        assertThat(lines).extracting(l -> l.split(" ")[0]).containsExactlyInAnyOrder("0", "1", "2", "3");
    }

    @Test
    void mainClassWithClassPath(@TempDir Path dir) throws Exception {
        assumeTrue(Files.isDirectory(Path.of("target/test-classes")), "test classes not built");
        CommandResult r = JdistCli.launch(T, RING, null, null, "-n", "2", "--class-path",
                Path.of("target/test-classes").toAbsolutePath().toString(), "--java-opt", "-Dx.y=z",
                RankInfo.class.getName(), "arg1");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(JdistCli.lines(r.stdout())).containsExactlyInAnyOrder("rank 0 z arg1 true true", "rank 1 z arg1 true true");
    }

}
