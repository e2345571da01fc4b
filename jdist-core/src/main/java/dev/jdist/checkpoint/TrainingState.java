package dev.jdist.checkpoint;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a training job needs to go on where it stopped: the number of steps done, named float and double arrays
 * (parameters, optimiser state), and small named strings (RNG seeds, the data position, anything else). Immutable: the
 * arrays are copied in and copied out.
 *
 * @param step     the number of steps done when this state was taken (the next step to run), at least 0
 * @param floats   named float arrays, in insertion order
 * @param doubles  named double arrays, in insertion order
 * @param metadata named strings, in insertion order
 */
public record TrainingState(long step, Map<String, float[]> floats, Map<String, double[]> doubles, Map<String, String> metadata) {

    public TrainingState {
        if (step < 0) {
            throw new IllegalArgumentException("step must be 0 or more, got " + step);
        }
        floats = copyFloats(floats);
        doubles = copyDoubles(doubles);
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        for (String name : metadata.keySet()) checkName(name);
        for (var e : metadata.entrySet()) {
            if (e.getValue() == null) throw new IllegalArgumentException("metadata '" + e.getKey() + "' is null; store a string");
        }
    }

    /** An empty state at {@code step}; add to it with {@link Builder}. */
    public static Builder at(long step) {
        return new Builder(step);
    }

    /** The float array {@code name} (a copy). */
    public float[] floatArray(String name) {
        float[] v = floats.get(name);
        if (v == null) throw new IllegalArgumentException("the state holds no float array '" + name + "' (it holds " + floats.keySet() + ")");
        return v.clone();
    }

    /** The double array {@code name} (a copy). */
    public double[] doubleArray(String name) {
        double[] v = doubles.get(name);
        if (v == null) throw new IllegalArgumentException("the state holds no double array '" + name + "' (it holds " + doubles.keySet() + ")");
        return v.clone();
    }

    /** The metadata {@code name}. */
    public String meta(String name) {
        String v = metadata.get(name);
        if (v == null) throw new IllegalArgumentException("the state holds no metadata '" + name + "' (it holds " + metadata.keySet() + ")");
        return v;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof TrainingState t) || t.step != step || !t.metadata.equals(metadata)
                || !t.floats.keySet().equals(floats.keySet()) || !t.doubles.keySet().equals(doubles.keySet())) {
            return false;
        }
        for (var e : floats.entrySet()) if (!Arrays.equals(e.getValue(), t.floats.get(e.getKey()))) return false;
        for (var e : doubles.entrySet()) if (!Arrays.equals(e.getValue(), t.doubles.get(e.getKey()))) return false;
        return true;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(step) * 31 + metadata.hashCode();
    }

    @Override
    public String toString() {
        return "TrainingState[step " + step + ", floats " + floats.keySet() + ", doubles " + doubles.keySet() + ", metadata " + metadata + "]";
    }

    static void checkName(String name) {
        if (name == null || name.isEmpty() || name.length() > 1024) {
            throw new IllegalArgumentException("a name in a training state must have 1 to 1024 characters, got "
                    + (name == null ? "null" : name.length() + ": '" + name + "'"));
        }
    }

    private static Map<String, float[]> copyFloats(Map<String, float[]> in) {
        Map<String, float[]> out = new LinkedHashMap<>();
        in.forEach((k, v) -> {
            checkName(k);
            if (v == null) throw new IllegalArgumentException("float array '" + k + "' is null");
            out.put(k, v.clone());
        });
        return Collections.unmodifiableMap(out);
    }

    private static Map<String, double[]> copyDoubles(Map<String, double[]> in) {
        Map<String, double[]> out = new LinkedHashMap<>();
        in.forEach((k, v) -> {
            checkName(k);
            if (v == null) throw new IllegalArgumentException("double array '" + k + "' is null");
            out.put(k, v.clone());
        });
        return Collections.unmodifiableMap(out);
    }

    /** Collects a state's parts; {@link #build()} copies them. */
    public static final class Builder {
        private final long step;
        private final Map<String, float[]> floats = new LinkedHashMap<>();
        private final Map<String, double[]> doubles = new LinkedHashMap<>();
        private final Map<String, String> metadata = new LinkedHashMap<>();

        private Builder(long step) {
            if (step < 0) throw new IllegalArgumentException("step must be 0 or more, got " + step);
            this.step = step;
        }

        public Builder put(String name, float[] values) {
            floats.put(name, values);
            return this;
        }

        public Builder put(String name, double[] values) {
            doubles.put(name, values);
            return this;
        }

        public Builder meta(String name, String value) {
            metadata.put(name, value);
            return this;
        }

        public Builder meta(String name, long value) {
            return meta(name, Long.toString(value));
        }

        public TrainingState build() {
            return new TrainingState(step, floats, doubles, metadata);
        }
    }
}
