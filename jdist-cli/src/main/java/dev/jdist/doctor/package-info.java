/**
 * {@code jdist doctor}: checks, before a job starts, what {@link dev.jdist.launch.JobRequirements} says the launcher
 * will need from every host (ssh login, java, jdist's jar, the program, free ring ports).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.cluster, dev.jdist.rendezvous, dev.jdist.hosts, dev.jdist.launch.
 */
package dev.jdist.doctor;
