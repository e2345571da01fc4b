/**
 * Element-wise sum, max and min per dtype (docs/reference/collectives.md §1.3): {@link dev.jdist.reduce.ScalarReducer}
 * is the reference, {@link dev.jdist.reduce.Reducer} the vectorised kernels that must match it byte for byte. Shared by
 * the ring, the mesh, JACCL, MPI's user-defined ops and the nn helpers.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.
 */
package dev.jdist.reduce;
