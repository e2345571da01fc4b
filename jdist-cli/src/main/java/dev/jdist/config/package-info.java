/**
 * {@code jdist config}: discovers a cluster over ssh (wiring, addresses, RDMA), checks its topology, plans and applies
 * the interface setup, and writes the hostfile through {@code hosts}. Uses {@code hosts} and {@code console}, never
 * {@code launch}.
 */
package dev.jdist.config;
