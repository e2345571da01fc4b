package dev.jdist.cluster;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * When no backend formed a group and {@code strict} is false, MLX falls back to the 1-rank group. jdist does too,
 * unless the environment says this process is one of several (docs/clusters.md, "Never several 1-rank groups"): then
 * every process would run alone, each believing it is the whole job. This finds that evidence and says what is wrong.
 */
public final class JobEvidence {

    private JobEvidence() {}

    /** The error to raise instead of the 1-rank group, or null when the process may well be alone. */
    public static String severalProcesses(JobDiscovery.Finding finding, Map<String, String> env, List<String> tried,
                                   Function<String, Optional<String>> whyUnavailable) {
        if (finding.job().isPresent() && finding.job().get().size() > 1) {
            var job = finding.job().get();
            return "this process is rank " + job.rank() + " of " + job.size() + " (" + job.source().description() + ": "
                    + job.rankVariable() + ", " + job.sizeVariable() + ") but no backend formed a group (" + reasons(tried, whyUnavailable)
                    + ")" + (job.source() == JobSource.MPI ? "; make MPI usable here, or set JDIST_BACKEND=ring to use the MPI "
                    + "launcher only to start the processes" : "") + ". Running it as a 1-process program would start "
                    + job.size() + " separate 1-rank jobs";
        }
        String rank = env.get("MLX_RANK");
        String hostfile = env.get("MLX_HOSTFILE");
        if ((rank == null || rank.isEmpty()) && hostfile != null && !hostfile.isEmpty()) {
            RingHostfile hf = RingHostfile.read(Path.of(hostfile));
            if (hf.size() > 1) {
                return "MLX_HOSTFILE=" + hostfile + " lists " + hf.size() + " ranks but MLX_RANK is not set, so this process "
                        + "cannot tell which of them it is (MLX would run it as a separate 1-rank job): set MLX_RANK to 0.."
                        + (hf.size() - 1) + ", one per process, or start them with `jdist launch`";
            }
        }
        String worldSize = env.get("MLX_WORLD_SIZE");
        if (rank != null && !rank.isEmpty() && worldSize != null && worldSize.strip().matches("[0-9]{1,9}")
                && Integer.parseInt(worldSize.strip()) > 1) {
            return "MLX_RANK=" + rank + " and MLX_WORLD_SIZE=" + worldSize.strip() + " describe a " + worldSize.strip()
                    + "-process job, but no backend formed a group (" + reasons(tried, whyUnavailable) + "); running it as a "
                    + "1-process program would start separate 1-rank jobs";
        }
        return null;
    }

    private static String reasons(List<String> tried, Function<String, Optional<String>> whyUnavailable) {
        List<String> parts = new ArrayList<>();
        for (String name : tried) {
            parts.add(name + ": " + whyUnavailable.apply(name).orElse("not configured by these variables"));
        }
        return String.join("; ", parts);
    }
}
