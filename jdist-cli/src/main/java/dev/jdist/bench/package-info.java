/**
 * {@code jdist bench}: the sweep, the worker every rank runs, and the table, CSV, JSON and plot of the results. The
 * job itself runs through {@code jdist launch} in a child process.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.algo, dev.jdist.console.
 */
package dev.jdist.bench;
