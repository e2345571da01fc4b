package dev.jdist.rendezvous;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jdist.DistributedException;
import dev.jdist.spi.RankRecord;

import java.util.List;

/** The JSON of a {@link RankRecord} and of rank 0's verdict (docs/clusters.md shows both). */
final class RecordCodec {
    private static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    /**
     * Rank 0's verdict: the table, or the one error every rank raises ({@code kind} "config" for a disagreement,
     * "deadline" when ranks are missing).
     */
    record Verdict(boolean ok, String kind, String error, List<RankRecord> ranks) {}

    private RecordCodec() {}

    static byte[] encode(RankRecord r) { return write(r); }

    static RankRecord decode(byte[] json, String what) { return read(json, RankRecord.class, what); }

    static byte[] encode(Verdict v) { return write(v); }

    static Verdict decodeVerdict(byte[] json) { return read(json, Verdict.class, "rank 0's verdict"); }

    private static byte[] write(Object o) {
        try {
            return JSON.writeValueAsBytes(o);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + o + " as JSON", e);
        }
    }

    private static <T> T read(byte[] json, Class<T> type, String what) {
        String why;
        try {
            T value = JSON.readValue(json, type);
            if (value != null) return value;
            why = "null";
            return fail(what, why, null);
        } catch (JsonProcessingException e) {
            return fail(what, e.getOriginalMessage(), e);
        } catch (java.io.IOException e) {
            return fail(what, e.getMessage(), e);
        }
    }

    private static <T> T fail(String what, String why, Exception cause) {
        throw new DistributedException("a malformed " + what + " in the rendezvous (" + why
                + "): a process that is not this job's jdist talks to the store", cause);
    }
}
