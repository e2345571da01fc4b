package dev.jdist.config;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.JdistCli;
import dev.jdist.testing.NetnsCluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Fake Macs for the config integration tests: a {@link NetnsCluster} (real sshd per namespace) whose PATH holds stub
 * {@code system_profiler}, {@code networksetup}, {@code ipconfig}, {@code ifconfig}, {@code route}, {@code ibv_devices}
 * and {@code sudo} scripts. The stubs replay the recorded outputs of the scenario {@link #use} selected
 * ({@code src/test/fixtures/config/SCENARIO/HOST/}) and append every command they receive to the host's
 * {@code received.log}. The stub sudo refuses (as a real one without a terminal does) when the fixture has a
 * {@code no-passwordless-sudo} file, else records and runs the command.
 */
final class FakeMacHosts implements AutoCloseable {
    static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    final NetnsCluster cluster;

    FakeMacHosts(int hosts, String prefix) {
        cluster = NetnsCluster.start(hosts, prefix);
        for (int i = 0; i < hosts; i++) {
            installStubs(i);
        }
    }

    private Path hostDir(int i) {
        return cluster.stubDir(i).getParent();
    }

    Path receivedLog(int i) {
        return hostDir(i).resolve("received.log");
    }

    private void installStubs(int i) {
        String h = hostDir(i).toString();
        String head = "#!/bin/sh\nH='" + h + "'\nF=$(cat \"$H/fixture\")\nprintf '%s\\n' \"${0##*/}${*:+ $*}\" >> \"$H/received.log\"\n";
        cluster.putStub(i, "system_profiler", head
                + "[ \"$*\" = 'SPThunderboltDataType -json' ] || { echo \"system_profiler stub: unexpected arguments $*\" >&2; exit 64; }\n"
                + "cat \"$F/system_profiler.json\"\n");
        cluster.putStub(i, "networksetup", head
                + "[ \"$*\" = '-listallhardwareports' ] || { echo \"networksetup stub: unexpected arguments $*\" >&2; exit 64; }\n"
                + "cat \"$F/networksetup.txt\"\n");
        cluster.putStub(i, "ipconfig", head
                + "[ \"$1\" = getifaddr ] || exit 64\n"
                + "[ -f \"$F/ipconfig-$2.txt\" ] || exit 1\ncat \"$F/ipconfig-$2.txt\"\n");
        cluster.putStub(i, "ibv_devices", head + "cat \"$F/ibv_devices.txt\"\n");
        cluster.putStub(i, "ifconfig", head);
        cluster.putStub(i, "route", head);
        // sudo records itself, not through the common head, so that a refused sudo leaves no line
        cluster.putStub(i, "sudo", "#!/bin/sh\nH='" + h + "'\nF=$(cat \"$H/fixture\")\n"
                + "if [ -e \"$F/no-passwordless-sudo\" ]; then echo 'sudo: a terminal is required to read the password;"
                + " either use the -S option to read from standard input or configure an askpass helper' >&2; exit 1; fi\n"
                + "printf '%s\\n' \"sudo $*\" >> \"$H/received.log\"\nexec \"$@\"\n");
    }

    /** Points host i at the recorded outputs of {@code fixtureHost[i]} in {@code scenario} and clears the logs. */
    void use(String scenario, String... fixtureHost) {
        try {
            for (int i = 0; i < cluster.size(); i++) {
                Path target = i < fixtureHost.length ? MacFixtures.ROOT.resolve(scenario).resolve(fixtureHost[i])
                        : Path.of("/nonexistent");
                Files.writeString(hostDir(i).resolve("fixture"), target.toString());
                Files.deleteIfExists(receivedLog(i));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every command host i's stubs received, in order. */
    List<String> received(int i) {
        try {
            return Files.exists(receivedLog(i)) ? Files.readAllLines(receivedLog(i)) : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The commands host i ran under sudo, except the {@code sudo ls} check. */
    List<String> sudoCommands(int i) {
        return received(i).stream().filter(l -> l.startsWith("sudo ") && !l.equals("sudo ls")).toList();
    }

    /** Runs {@code jdist ARGS} from the shaded jar with the cluster's ssh wrapper first on PATH, stdin at EOF. */
    CommandResult jdist(String... args) {
        return jdist(cluster, args);
    }

    static CommandResult jdist(NetnsCluster cluster, String... args) {
        return jdistIn(cluster, null, args);
    }

    /** {@link #jdist} with a working directory (for {@code jdist launch}, whose ranks start in the same folder). */
    static CommandResult jdistIn(NetnsCluster cluster, Path cwd, String... args) {
        return JdistCli.run(cwd == null ? RUN_TIMEOUT : Duration.ofSeconds(400), cwd,
                Map.of("PATH", cluster.launcherPath(), "NO_COLOR", "1"), null, args);
    }

    @Override
    public void close() {
        cluster.close();
    }
}
