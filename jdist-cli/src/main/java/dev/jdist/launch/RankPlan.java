package dev.jdist.launch;

import dev.jdist.hosts.HostEntry;

import java.util.List;

/**
 * What one rank gets: its host, the ordered environment entries (docs/reference/launcher.md §4.1 steps 1–4 and 6),
 * the file variables created on its host (step 5), and whether an inherited {@code MLX_HOSTFILE}
 * must be removed (single-rank ring).
 */
public record RankPlan(int rank, HostEntry host, List<EnvEntry> env, List<FileVar> files, boolean dropInheritedHostfile) {

    /** A variable whose value is the path of a fresh temporary file on the rank's host holding {@code content} + newline. */
    public record FileVar(String name, String content) {
    }

    public RankPlan {
        env = List.copyOf(env);
        files = List.copyOf(files);
    }
}
