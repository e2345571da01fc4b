package dev.jdist.config;

import java.util.List;

/**
 * A reason {@code jdist config} stops: the ERROR lines to print (each may be empty) and the exit status
 * (1 for a cluster problem, 2 for a usage error).
 */
public final class ConfigFailure extends RuntimeException {
    private final List<String> lines;
    private final int exitCode;

    public ConfigFailure(int exitCode, List<String> lines) {
        super(String.join("\n", lines));
        this.lines = List.copyOf(lines);
        this.exitCode = exitCode;
    }

    public ConfigFailure(List<String> lines) {
        this(1, lines);
    }

    public static ConfigFailure of(String... lines) {
        return new ConfigFailure(1, List.of(lines));
    }

    public static ConfigFailure usage(String message) {
        return new ConfigFailure(2, List.of(message));
    }

    public List<String> lines() {
        return lines;
    }

    public int exitCode() {
        return exitCode;
    }
}
