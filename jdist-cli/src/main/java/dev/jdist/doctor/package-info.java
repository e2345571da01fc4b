/**
 * {@code jdist doctor}: checks, before a job starts, what {@link dev.jdist.launch.JobRequirements} says the launcher
 * will need from every host (ssh login, java, jdist's jar, the program, free ring ports).
 */
package dev.jdist.doctor;
