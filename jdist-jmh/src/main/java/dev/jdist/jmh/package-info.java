/**
 * JMH micro-benchmarks of the reduction kernels and the ring schedule (docs/benchmarks.md); an operation's trace is
 * measured by {@code dev.jdist.OperationTraceBenchmark}, which sits in {@code dev.jdist} to form a group over a no-op
 * backend.
 */
package dev.jdist.jmh;
