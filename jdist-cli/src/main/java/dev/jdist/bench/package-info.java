/**
 * {@code jdist bench}: the sweep, the worker every rank runs, and the table, CSV, JSON and plot of the results. The
 * job itself runs through {@code jdist launch} in a child process.
 */
package dev.jdist.bench;
