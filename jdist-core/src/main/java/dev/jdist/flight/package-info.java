/**
 * The flight recorder (docs/observability.md, "The flight recorder"): a group's last operations
 * ({@link dev.jdist.flight.OperationTrace}, {@link dev.jdist.flight.OperationRing}), the process's records and the file
 * they are written to ({@link dev.jdist.flight.FlightRecorder}, in the format {@link dev.jdist.flight.FlightDump}), the
 * analysis of a job's records ({@link dev.jdist.flight.FlightAnalysis}, pure) and the summary of JDK Flight Recorder
 * recordings of {@code dev.jdist.Operation} events ({@link dev.jdist.flight.OperationSummary}, a main class).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.
 */
package dev.jdist.flight;
