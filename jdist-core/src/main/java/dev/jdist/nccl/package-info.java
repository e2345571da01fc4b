/**
 * The NCCL backend (docs/reference/collectives.md §6): configuration, the unique-id bootstrap, the CUDA and NCCL
 * bindings ({@code java.lang.foreign}) and device arrays; {@link dev.jdist.nccl.NcclGroup#of} gives a program the
 * NCCL side of its group.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi.
 */
package dev.jdist.nccl;
