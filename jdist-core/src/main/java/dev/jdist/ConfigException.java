package dev.jdist;

/** The configuration (environment, hostfile, device file, library) is missing or wrong; the message names the fix. */
public class ConfigException extends DistributedException {
    public ConfigException(String message) { super(message); }
    public ConfigException(String message, Throwable cause) { super(message, cause); }
}
