/**
 * The JACCL backend (docs/reference/collectives.md §4): configuration, the side channel, the libibverbs binding and
 * transport ({@link dev.jdist.jaccl.VerbsTransport}), and the mesh and ring algorithms written against
 * {@link dev.jdist.jaccl.RdmaTransport} (tested over an in-memory fabric).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.reduce, dev.jdist.algo.
 */
package dev.jdist.jaccl;
