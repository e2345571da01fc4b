package dev.jdist.mpi;

import dev.jdist.ConfigException;

/** The MPI library could not be found, loaded or recognised; the message says what was tried and how to fix it. */
final class MpiLoadException extends ConfigException {
    MpiLoadException(String message) { super(message); }
}
