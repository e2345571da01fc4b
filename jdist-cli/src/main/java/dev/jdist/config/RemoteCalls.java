package dev.jdist.config;

import dev.jdist.console.CliFailure;
import dev.jdist.console.ConsoleLog;
import java.time.Duration;
import java.util.List;

/**
 * The data-collection calls of one run: each through the {@link RemoteShell} with {@link HostPlatform#CALL_DEADLINE},
 * logged with {@code --verbose}, and turned into an ERROR naming the host and the command when ssh fails or times out.
 */
public final class RemoteCalls {
    private final RemoteShell shell;
    private final ConsoleLog log;

    public RemoteCalls(RemoteShell shell, ConsoleLog log) {
        this.shell = shell;
        this.log = log;
    }

    public RemoteShell shell() {
        return shell;
    }

    public ConsoleLog log() {
        return log;
    }

    /** Runs the command; exit statuses are the caller's business, but a timeout or an ssh failure (255) is fatal. */
    public RemoteShell.Result run(String host, String... remoteArgs) {
        return run(host, HostPlatform.CALL_DEADLINE, remoteArgs);
    }

    public RemoteShell.Result run(String host, Duration deadline, String... remoteArgs) {
        List<String> args = List.of(remoteArgs);
        String shown = String.join(" ", args);
        log.info("Running " + String.join(" ", shell.commandLine(host, args)));
        RemoteShell.Result r = shell.run(host, args, deadline);
        if (r.timedOut()) {
            throw CliFailure.of(1, "`" + shown + "` on " + host + " did not finish within " + deadline.toSeconds()
                    + " s; check that " + host + " is responsive (ssh " + host + " " + shown + ")");
        }
        if (r.exitCode() == 255) {
            throw CliFailure.of(1, "ssh to " + host + " failed while running `" + shown + "`: " + r.reason());
        }
        return r;
    }

    /** Like {@link #run} but a non-zero exit status is fatal too. */
    public String output(String host, String... remoteArgs) {
        RemoteShell.Result r = run(host, remoteArgs);
        if (r.exitCode() != 0) {
            throw CliFailure.of(1, "`" + String.join(" ", remoteArgs) + "` failed on " + host + " with exit status "
                    + r.exitCode() + (r.reason().isEmpty() ? "" : ": " + r.reason()));
        }
        return r.stdout();
    }
}
