package dev.jdist.mpi;

import dev.jdist.ConfigException;
import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JdistTimeout;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code mpi} backend (docs/reference/collectives.md §5): libmpi (Open MPI 4/5 or MPICH) through
 * {@code java.lang.foreign}. Nothing is loaded until this backend is asked for.
 *
 * <p>"Not configured" (non-strict: empty; strict: {@link ConfigException}) means: the library is
 * absent or unrecognised, {@code MPI_Init_thread} failed, or the world has one process. A process
 * that no MPI launcher started ({@code OMPI_*}, {@code PMI_*}, {@code PMIX_RANK} all unset, and
 * {@code JDIST_MPI_INIT} not {@code 1}) is a 1-process world without calling {@code MPI_Init}, so
 * under backend {@code "any"} MPI never shadows the other backends.
 *
 * <p>{@code JDIST_TIMEOUT} (read once, when MPI starts) bounds every operation: one that does not
 * complete in time ends the job with {@code MPI_Abort} and a {@link dev.jdist.DeadlineExceededException}
 * on stderr (see {@link MpiRuntime#await}).
 */
public final class MpiBackend implements Backend {
    private static final System.Logger LOG = System.getLogger("dev.jdist.mpi");
    /** The exit status {@code MPI_Abort} gives the job when jdist ends it (70, EX_SOFTWARE). */
    public static final int ABORT_EXIT_CODE = 70;
    /**
     * The start of the stderr line a rank prints just before {@code MPI_Abort}; {@code jdist launch} watches
     * {@code mpirun}'s stderr for it to bound a job that an unreachable host keeps from ending.
     */
    public static final String ABORT_NOTICE = "jdist: ending the MPI job with MPI_Abort";
    /**
     * How long {@code MPI_Abort} may take before the rank ends itself with {@link #ABORT_EXIT_CODE}: on a host cut off
     * from {@code mpirun} (a network partition) the abort waits for a launcher it cannot reach and never returns.
     */
    public static final long ABORT_BOUND_MILLIS = 10_000;

    @Override
    public String name() { return "mpi"; }

    @Override
    public boolean isAvailable() {
        return unavailableReason().isEmpty();
    }

    @Override
    public Optional<String> unavailableReason() {
        try {
            MpiRuntime.library(System.getenv());
            return Optional.empty();
        } catch (RuntimeException | LinkageError e) {
            return Optional.of(String.valueOf(e.getMessage()));
        }
    }

    @Override
    public Optional<GroupImpl> init(boolean strict, Map<String, String> env) {
        boolean launched = MpiLibraryLocator.startedByLauncher(env);
        if (!strict && !launched) return Optional.empty();

        MpiLibrary lib;
        try {
            lib = MpiRuntime.library(env);
        } catch (MpiLoadException e) {
            if (strict) throw e;
            LOG.log(System.Logger.Level.WARNING, "an MPI launcher started this process but jdist cannot use MPI: {0}", e.getMessage());
            return Optional.empty();
        }
        if (!launched) {
            throw new ConfigException("the MPI world has one process: no MPI launcher started this process (OMPI_*, PMI_RANK, "
                    + "PMI_SIZE and PMIX_RANK are unset). Start it with `mpirun -n N` (" + lib.abi.family() + ": "
                    + (lib.abi instanceof OpenMpiAbi ? "mpirun.openmpi" : "mpirun.mpich") + ") or `jdist launch --backend mpi`, "
                    + "or set JDIST_MPI_INIT=1 if your launcher is not recognised");
        }
        Duration deadline = JdistTimeout.parse(env.get(JdistTimeout.VARIABLE));   // a bad value fails before MPI starts
        MpiRuntime rt;
        try {
            rt = MpiRuntime.initialise(lib, deadline);
        } catch (ConfigException e) {
            if (strict) throw e;
            LOG.log(System.Logger.Level.WARNING, e.getMessage());
            return Optional.empty();
        }
        MpiGroup world = new MpiGroup(rt, rt.abi.commWorld(), true);
        if (world.size() <= 1) {
            if (strict) {
                throw new ConfigException("the MPI world has one process (" + lib + "); start the program with "
                        + "`mpirun -n N` using the mpirun of the same MPI, or `jdist launch --backend mpi`");
            }
            return Optional.empty();
        }
        return Optional.of(world);
    }
}
