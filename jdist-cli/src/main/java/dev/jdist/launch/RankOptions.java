package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;

/**
 * What every rank of a job gets besides its place (docs/reference/launcher.md §1.2): extra environment variables and CPU binding.
 * A picocli mixin shared by {@code jdist launch} and {@code jdist bench}; {@code order} as in {@link JobTargetOptions}.
 */
public final class RankOptions {

    @Option(names = "--env", order = 50, paramLabel = "NAME=VALUE", description = "Environment variable for every rank (repeatable).")
    public List<String> env = new ArrayList<>();

    @Option(names = "--bind-to", order = 220, paramLabel = "none|core", description = {"core: pin each rank to one CPU of its host (the rank's "
            + "index among that host's ranks, modulo its CPUs; Linux taskset) so that ranks polling for messages do not "
            + "migrate between CPUs. Default: none."})
    public String bindTo;

    /** {@code --bind-to}: none (default) or core. */
    public boolean bindToCore() {
        if (bindTo == null || bindTo.equals("none")) return false;
        if (bindTo.equals("core")) return true;
        throw CliFailure.usage("--bind-to must be none or core, got '" + bindTo + "'");
    }

    /** These options as {@code jdist launch} arguments. */
    public List<String> asLaunchArguments() {
        List<String> args = new ArrayList<>();
        if (bindTo != null) {
            args.addAll(List.of("--bind-to", bindTo));
        }
        for (String e : env) {
            args.addAll(List.of("--env", e));
        }
        return args;
    }
}
