/**
 * The MPI backend (docs/reference/collectives.md §5): library discovery, the Open MPI and MPICH ABIs, runtime state,
 * the group ({@link dev.jdist.mpi.MpiGroup}) and user-defined ops, bound with {@code java.lang.foreign}. Writes the
 * flight record before {@code MPI_Abort} ends the process.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.reduce, dev.jdist.flight.
 */
package dev.jdist.mpi;
