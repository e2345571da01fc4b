package dev.jdist.launch;

import dev.jdist.console.CliFailure;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How {@code jdist launch} starts the ranks ({@code --launcher}, docs/clusters.md): through the host list ({@link #SSH}:
 * 127.0.0.1 entries as local processes, the others over ssh, MLX's rule), with Slurm's {@code srun} ({@link #SRUN}: one
 * job step, Slurm places the tasks), or all on this machine ({@link #LOCAL}). Pure: the choice is made from the options,
 * the environment and whether {@code srun} is on PATH.
 */
public enum Placement {
    SSH, SRUN, LOCAL;

    /** What {@code --launcher} takes. */
    public static final List<String> NAMES = List.of("auto", "ssh", "srun", "local");

    /** The choice and, for {@code auto}, why (an {@code [INFO]} line), or null. */
    public record Choice(Placement placement, String why) {
    }

    /**
     * @param option      {@code --launcher}'s value, null for auto
     * @param given       the long names of the options the command line set ({@link LaunchArguments.Parsed#given()})
     * @param backend     the chosen backend
     * @param env         the launcher's environment
     * @param srunOnPath  whether {@code srun} can be found
     */
    public static Choice choose(String option, Set<String> given, String backend, Map<String, String> env, boolean srunOnPath) {
        String o = option == null ? "auto" : option;
        boolean hostsGiven = given.contains("--hosts") || given.contains("--hostfile");
        switch (o) {
            case "ssh" -> {
                return new Choice(SSH, null);
            }
            case "local" -> {
                if (backend.equals("mpi")) {
                    throw CliFailure.usage("--launcher local does not apply to --backend mpi: mpirun starts the ranks itself "
                            + "(leave out --launcher)");
                }
                return new Choice(LOCAL, null);
            }
            case "srun" -> {
                if (backend.equals("mpi")) {
                    throw CliFailure.usage("--launcher srun does not apply to --backend mpi: mpirun starts the ranks itself (inside "
                            + "a Slurm allocation it places them with Slurm); leave out --launcher, or run srun --mpi=pmix yourself");
                }
                if (given.contains("--hostfile")) {
                    throw CliFailure.usage("--launcher srun places the ranks with Slurm, so a hostfile's hosts and ports do not "
                            + "apply: leave out --hostfile (--hosts NODE1,NODE2 chooses Slurm nodes, -n the ranks per node)");
                }
                if (!srunOnPath) {
                    throw CliFailure.of(1, "--launcher srun: srun not found on PATH (" + env.getOrDefault("PATH", "") + "); "
                            + "install Slurm's client commands (Debian: slurm-client) or put their folder on PATH");
                }
                return new Choice(SRUN, null);
            }
            case "auto" -> {
                String job = value(env, "SLURM_JOB_ID");
                boolean inAllocation = job != null && value(env, "SLURM_STEP_ID") == null;
                if (!backend.equals("mpi") && inAllocation && !hostsGiven) {
                    if (srunOnPath) {
                        return new Choice(SRUN, "inside Slurm job " + job + ": the ranks are placed with srun (--launcher ssh "
                                + "or local starts them otherwise)");
                    }
                    return new Choice(SSH, "inside Slurm job " + job + " but no srun on PATH: the ranks start from the host "
                            + "list (" + "--launcher srun needs srun)");
                }
                return new Choice(SSH, null);
            }
            default -> throw CliFailure.usage("argument --launcher: invalid choice: '" + o + "' (choose from "
                    + String.join(", ", NAMES) + ")");
        }
    }

    private static String value(Map<String, String> env, String name) {
        String v = env.get(name);
        return v == null || v.isBlank() ? null : v;
    }
}
