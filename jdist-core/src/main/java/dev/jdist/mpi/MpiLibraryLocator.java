package dev.jdist.mpi;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Which library names to try, in order (docs/reference/collectives.md §5.1 and §9): {@code MLX_MPI_LIBNAME},
 * then {@code MPI_LIBNAME}, then the names Open MPI 4/5 and MPICH install on Linux or macOS.
 *
 * <p>When the process was started by a launcher whose family is recognisable from its environment
 * ({@code OMPI_*} from Open MPI's {@code mpirun}; {@code PMI_RANK}/{@code PMI_FD} from MPICH's Hydra),
 * that family's names come first, so a machine with both installed picks the library that matches
 * the {@code mpirun} in use.
 */
final class MpiLibraryLocator {

    /** Where the names came from: a variable the user set, or jdist's search list. */
    record Candidates(List<String> names, String variable) {
        boolean fromVariable() { return variable != null; }
    }

    static final List<String> LINUX_OPEN_MPI = List.of("libmpi.so.40", "/usr/lib64/openmpi/lib/libmpi.so.40");
    static final List<String> LINUX_MPICH = List.of("libmpi.so.12", "libmpich.so.12", "/usr/lib64/mpich/lib/libmpi.so.12");
    static final List<String> LINUX_UNVERSIONED = List.of("libmpi.so", "libmpich.so");
    static final List<String> MAC_OPEN_MPI = List.of("libmpi.40.dylib", "/opt/homebrew/opt/open-mpi/lib/libmpi.40.dylib",
            "/usr/local/opt/open-mpi/lib/libmpi.40.dylib", "/opt/local/lib/openmpi-mp/libmpi.40.dylib");
    static final List<String> MAC_MPICH = List.of("libmpi.12.dylib", "libmpich.12.dylib",
            "/opt/homebrew/opt/mpich/lib/libmpi.12.dylib", "/usr/local/opt/mpich/lib/libmpi.12.dylib",
            "/opt/local/lib/mpich-mp/libmpi.12.dylib");
    static final List<String> MAC_UNVERSIONED = List.of("libmpi.dylib", "/opt/homebrew/lib/libmpi.dylib",
            "/usr/local/lib/libmpi.dylib", "libmpich.dylib");

    private MpiLibraryLocator() {}

    /** The launcher family the environment points at: "Open MPI", "MPICH" or null. */
    static String launcherFamily(Map<String, String> env) {
        for (String k : env.keySet()) {
            if (k.startsWith("OMPI_")) return "Open MPI";
        }
        if (env.containsKey("PMI_RANK") || env.containsKey("PMI_FD") || env.containsKey("PMI_SIZE")
                || env.containsKey("HYDI_CONTROL_FD") || env.containsKey("MPI_LOCALNRANKS")) {
            return "MPICH";
        }
        return null;
    }

    /**
     * Whether an MPI launcher ({@code mpirun}/{@code mpiexec}, Slurm's PMI/PMIx) started this process;
     * {@code JDIST_MPI_INIT=1} asserts it for launchers jdist does not recognise.
     */
    static boolean startedByLauncher(Map<String, String> env) {
        if ("1".equals(env.get("JDIST_MPI_INIT"))) return true;
        return launcherFamily(env) != null || env.containsKey("PMIX_RANK");
    }

    static Candidates candidates(Map<String, String> env, String osName) {
        for (String variable : List.of("MLX_MPI_LIBNAME", "MPI_LIBNAME")) {
            String v = env.get(variable);
            if (v != null && !v.isBlank()) return new Candidates(List.of(v.strip()), variable);
        }
        boolean mac = osName.toLowerCase(Locale.ROOT).contains("mac") || osName.toLowerCase(Locale.ROOT).contains("darwin");
        List<String> openMpi = mac ? MAC_OPEN_MPI : LINUX_OPEN_MPI;
        List<String> mpich = mac ? MAC_MPICH : LINUX_MPICH;
        List<String> names = new ArrayList<>();
        if ("MPICH".equals(launcherFamily(env))) {
            names.addAll(mpich);
            names.addAll(openMpi);
        } else {
            names.addAll(openMpi);
            names.addAll(mpich);
        }
        names.addAll(mac ? MAC_UNVERSIONED : LINUX_UNVERSIONED);
        return new Candidates(List.copyOf(names), null);
    }
}
