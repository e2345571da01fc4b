package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostEntry;
import dev.jdist.spi.JobToken;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The mpi backend (docs/reference/launcher.md §5.5): library discovery, the temporary {@code host slots=N} file, and the
 * {@code mpirun} argv in Open MPI 5 form (MLX's) or Open MPI 4 form.
 */
public final class MpiLaunch {

    private static final Pattern OMPI4 = Pattern.compile("Open MPI\\)?\\s+v?4\\.");

    private MpiLaunch() {
    }

    /** The hostfile content: one line per distinct ssh name, in order of first appearance. */
    public static String hostfile(List<HostEntry> hosts) {
        Map<String, Integer> slots = new LinkedHashMap<>();
        for (HostEntry h : hosts) {
            slots.merge(h.ssh(), 1, Integer::sum);
        }
        StringBuilder sb = new StringBuilder();
        slots.forEach((name, n) -> sb.append(name).append(" slots=").append(n).append('\n'));
        return sb.toString();
    }

    /** Whether {@code mpirun --version} output names Open MPI 4.x. */
    public static boolean isOpenMpi4(String versionOutput) {
        return versionOutput != null && OMPI4.matcher(versionOutput).find();
    }

    /** The library name from {@code ldd}/{@code otool -L} output: the first word of the first line with libmpi. */
    public static Optional<String> libraryName(String linkerOutput) {
        for (String line : linkerOutput.split("\n")) {
            if (line.contains("libmpi")) {
                String word = line.trim().split("\\s+")[0];
                if (word.startsWith("@rpath/")) {
                    word = word.substring("@rpath/".length());
                }
                return word.isEmpty() ? Optional.empty() : Optional.of(word);
            }
        }
        return Optional.empty();
    }

    /** Discovery entries ({@code DYLD_LIBRARY_PATH}, {@code MLX_MPI_LIBNAME}), or none on any failure. */
    public static List<EnvEntry> discover(Path mpirun) {
        Optional<Path> ompiInfo = Executables.onPath("ompi_info");
        if (ompiInfo.isEmpty()) {
            return List.of();
        }
        boolean mac = System.getProperty("os.name", "").toLowerCase().contains("mac");
        List<String> argv = mac ? List.of("otool", "-L", ompiInfo.get().toString()) : List.of("ldd", ompiInfo.get().toString());
        Optional<Path> tool = Executables.onPath(argv.get(0));
        if (tool.isEmpty()) {
            return List.of();
        }
        List<String> resolved = new ArrayList<>(argv);
        resolved.set(0, tool.get().toString());
        Optional<String> name = Executables.output(resolved, 10).flatMap(MpiLaunch::libraryName);
        if (name.isEmpty()) {
            return List.of();
        }
        Path parent = mpirun.getParent() == null ? null : mpirun.getParent().getParent();
        String lib = (parent == null ? Path.of("/") : parent).resolve("lib").toString();
        return List.of(new EnvEntry("DYLD_LIBRARY_PATH", lib), new EnvEntry("MLX_MPI_LIBNAME", name.get()));
    }

    /**
     * jdist's own variables for the ranks of an mpi job ([jdist], docs/reference/launcher.md §5.5): {@code environment}
     * goes into {@code mpirun}'s own environment, and each of {@code forwardedNames} becomes a {@code -x NAME} word pair
     * after MLX's entries. A name alone makes Open MPI pass the value from {@code mpirun}'s environment to every rank on
     * every host, so the job token never appears on a command line (which every user of the host can read). MPICH's
     * {@code mpiexec} passes its whole environment on and does not know {@code -x}: nothing is forwarded by name there.
     */
    public record JdistVariables(Map<String, String> environment, List<String> forwardedNames) {}

    /**
     * @param token         {@code JDIST_JOB_TOKEN}, or null ({@code --mlx-compatible})
     * @param dumpDir       {@code JDIST_DUMP_DIR} (the job's flight-record directory), or null
     * @param argvEntries   MLX's {@code -x} entries (discovery, hostfile {@code envs}, {@code --env}, terminal size): a
     *                      name among them is left to them
     * @param openMpi       whether {@code mpirun --version} names Open MPI
     * @param mlxCompatible {@code --mlx-compatible}: the command line stays exactly MLX's (nothing forwarded by name)
     */
    public static JdistVariables jdistVariables(String token, String dumpDir, List<EnvEntry> argvEntries, boolean openMpi,
                                                boolean mlxCompatible) {
        Map<String, String> env = new LinkedHashMap<>();
        if (token != null) env.put(JobToken.VARIABLE, token);
        if (dumpDir != null) env.put("JDIST_DUMP_DIR", dumpDir);
        env.keySet().removeIf(name -> argvEntries.stream().anyMatch(e -> e.name().equals(name)));
        List<String> forwarded = openMpi && !mlxCompatible ? List.copyOf(env.keySet()) : List.of();
        return new JdistVariables(env, forwarded);
    }

    /** Whether {@code mpirun --version} output names Open MPI (any version). */
    public static boolean isOpenMpi(String versionOutput) {
        return versionOutput != null && versionOutput.contains("Open MPI");
    }

    /** Splits every {@code --mpi-arg} value like a POSIX shell. */
    public static List<String> mpiArgWords(List<String> mpiArgs) {
        List<String> out = new ArrayList<>();
        for (String a : mpiArgs) {
            try {
                out.addAll(ShellQuote.split(a));
            } catch (IllegalArgumentException e) {
                throw CliFailure.usage("--mpi-arg '" + a + "': " + e.getMessage() + "; close the quote or escape it");
            }
        }
        return out;
    }

    /**
     * {@code mpirun --output :raw --hostfile F [-cwd D] (-x E)* WORDS -- ARGV} (Open MPI 5 / MLX), or for Open MPI 4
     * {@code mpirun --hostfile F [-wdir D] (-x E)* WORDS -- ARGV}.
     */
    public static List<String> argv(String mpirun, boolean openMpi4, String hostfile, String cwd, List<EnvEntry> env,
                                    List<String> mpiArgWords, List<String> command) {
        return argv(mpirun, openMpi4, hostfile, cwd, env, List.of(), mpiArgWords, command);
    }

    /** The same, with {@code -x NAME} for each of {@code forwardedNames} ({@link JdistVariables}) after MLX's entries. */
    public static List<String> argv(String mpirun, boolean openMpi4, String hostfile, String cwd, List<EnvEntry> env,
                                    List<String> forwardedNames, List<String> mpiArgWords, List<String> command) {
        List<String> a = new ArrayList<>();
        a.add(mpirun);
        if (!openMpi4) {
            a.add("--output");
            a.add(":raw");
        }
        a.add("--hostfile");
        a.add(hostfile);
        if (cwd != null) {
            a.add(openMpi4 ? "-wdir" : "-cwd");
            a.add(cwd);
        }
        for (EnvEntry e : env) {
            a.add("-x");
            a.add(e.toString());
        }
        for (String name : forwardedNames) {
            a.add("-x");
            a.add(name);
        }
        a.addAll(mpiArgWords);
        a.add("--");
        a.addAll(command);
        return a;
    }
}
