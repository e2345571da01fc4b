package dev.jdist.spi;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The rendezvous store as later start-up steps and jdist's own services see it: a small key–value store that every
 * rank of a job reaches (rank 0 serves it). Every call is bounded; a lost store is a {@link dev.jdist.DistributedException}.
 */
public interface KeyValueStore {

    void set(String key, byte[] value);

    Optional<byte[]> get(String key);

    /** Waits until every key exists; returns the keys still missing when {@code timeout} ran out (empty: all there). */
    List<String> await(List<String> keys, Duration timeout);

    /** Adds {@code delta} to the 64-bit counter at {@code key} (absent = 0) and returns the new value. */
    long add(String key, long delta);

    /**
     * Sets {@code key} to {@code desired} when its value is {@code expected} ({@code null}: when absent); returns the
     * value the key holds afterwards (the desired one when the swap happened).
     */
    byte[] compareAndSet(String key, byte[] expected, byte[] desired);
}
