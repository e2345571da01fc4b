/**
 * What more than one of jdist's test suites needs (docs/architecture.md, "Test support"): requirements and the
 * {@code CI=true} rule, child JVMs and processes, commands with deadlines, free ports, network-namespace clusters, the
 * delay relay, and the allowed-imports table with its check ({@link dev.jdist.testing.PackageRules}).
 *
 * <p>Imports nothing of jdist: jdist-core's tests use this module.
 */
package dev.jdist.testing;
