/**
 * {@code jdist config}: discovers a cluster over ssh (wiring, addresses, RDMA), checks its topology, plans and applies
 * the interface setup, and writes the hostfile through {@code hosts}. Uses {@code hosts} and {@code console}, never
 * {@code launch}.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.console, dev.jdist.hosts.
 */
package dev.jdist.config;
