package dev.jdist.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;

/**
 * A {@link RemoteShell} that answers like the fake macOS hosts of the integration tests, from the recorded outputs in
 * {@code src/test/fixtures/config/SCENARIO/HOST/}, and records every command it receives as {@code "HOST: COMMAND"}.
 */
final class RecordedMacShell implements RemoteShell {
    private final Path scenario;
    private final Set<String> unreachable;
    final List<String> received = Collections.synchronizedList(new ArrayList<>());

    RecordedMacShell(String scenario, String... unreachable) {
        this.scenario = MacFixtures.ROOT.resolve(scenario);
        this.unreachable = Set.of(unreachable);
    }

    @Override
    public List<String> commandLine(String host, List<String> remoteArgs) {
        List<String> argv = new ArrayList<>(List.of("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", host));
        argv.addAll(remoteArgs);
        return argv;
    }

    @Override
    public Result run(String host, List<String> remoteArgs, Duration deadline) {
        if (unreachable.contains(host)) {
            return new Result(255, "", "ssh: connect to host " + host + " port 22: Connection refused\n", false);
        }
        String command = String.join(" ", remoteArgs);
        received.add(host + ": " + command);
        Path dir = scenario.resolve(host);
        try {
            return switch (command) {
                case "echo success" -> new Result(0, "success\n", "", false);
                case "sudo ls" -> Files.exists(dir.resolve("no-passwordless-sudo"))
                        ? new Result(1, "", "sudo: a terminal is required to read the password\n", false)
                        : new Result(0, "file\n", "", false);
                case "system_profiler SPThunderboltDataType -json" -> file(dir.resolve("system_profiler.json"));
                case "networksetup -listallhardwareports" -> file(dir.resolve("networksetup.txt"));
                case "ibv_devices" -> file(dir.resolve("ibv_devices.txt"));
                case "ipconfig getifaddr en0" -> file(dir.resolve("ipconfig-en0.txt"));
                case "ipconfig getifaddr en1" -> file(dir.resolve("ipconfig-en1.txt"));
                default -> command.startsWith("sudo ") ? new Result(0, "", "", false)
                        : new Result(127, "", "sh: " + command + ": command not found\n", false);
            };
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Result file(Path p) throws java.io.IOException {
        return Files.exists(p) ? new Result(0, Files.readString(p), "", false) : new Result(1, "", "", false);
    }
}
