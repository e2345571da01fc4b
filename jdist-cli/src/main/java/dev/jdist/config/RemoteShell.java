package dev.jdist.config;

import java.time.Duration;
import java.util.List;

/** Runs a command on a host (over ssh in production; recorded answers in unit tests). */
public interface RemoteShell {

    /** What a remote command did: exit status (255 = ssh itself failed), its output, and whether the deadline hit. */
    record Result(int exitCode, String stdout, String stderr, boolean timedOut) {
        public boolean ok() {
            return exitCode == 0 && !timedOut;
        }

        /** The last non-blank stderr line (ssh puts its reason there), or "" . */
        public String reason() {
            String[] lines = stderr.strip().split("\n");
            return lines[lines.length - 1].strip();
        }
    }

    /**
     * Runs {@code remoteArgs} on {@code host} ({@code ssh -o BatchMode=yes -o ConnectTimeout=5 HOST ARGS...}) with stdin
     * at end-of-file; never waits past {@code deadline}.
     */
    Result run(String host, List<String> remoteArgs, Duration deadline);

    /** The command line {@link #run} executes, for {@code --verbose} and messages. */
    List<String> commandLine(String host, List<String> remoteArgs);
}
