package dev.jdist.liveness;

import dev.jdist.PeerUnresponsiveException.State;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** What {@code /proc} says about a process on this host: running, stopped or gone. */
final class ProcessProbe {
    private ProcessProbe() {}

    /** The state of process {@code pid} on this host; {@link State#UNKNOWN} when {@code /proc} cannot say. */
    static State state(long pid) {
        if (pid <= 0) return State.UNKNOWN;
        String stat;
        try {
            stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        } catch (NoSuchFileException e) {
            return Files.isDirectory(Path.of("/proc/self")) ? State.EXITED : State.UNKNOWN;
        } catch (IOException | RuntimeException e) {
            return State.UNKNOWN;
        }
        return parse(stat);
    }

    /** The state letter of a {@code /proc/PID/stat} line: the first field after the command's closing parenthesis. */
    static State parse(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0 || close + 2 >= stat.length()) return State.UNKNOWN;
        return switch (stat.charAt(close + 2)) {
            case 'T', 't' -> State.STOPPED;
            case 'Z', 'X', 'x' -> State.EXITED;
            case 'R', 'S', 'D', 'I', 'W', 'P', 'K' -> State.RUNNING;
            default -> State.UNKNOWN;
        };
    }
}
