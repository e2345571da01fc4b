package dev.jdist.liveness;

import dev.jdist.DeadlineExceededException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;

/**
 * Why a rank's group broke, as ranks tell each other in heartbeats (docs/reference/collectives.md §11.3).
 *
 * @param kind       what happened
 * @param origin     the rank that saw it first-hand (declared the silence, lost the connection, failed)
 * @param subject    the rank it concerns (the silent, departed or unreachable peer), or -1
 * @param state      for {@link Kind#SILENT}: what {@code origin} knew about the subject's process
 * @param silenceMs  for {@link Kind#SILENT}: how long nothing had been heard from the subject
 * @param errorClass for {@link Kind#FAILED}: the simple name of the exception {@code origin} raised
 * @param text       the first-hand account: the error message, or the mismatch
 */
record Reason(Kind kind, int origin, int subject, PeerUnresponsiveException.State state, long silenceMs, String errorClass, String text) {

    enum Kind {
        /** {@code origin} heard nothing from {@code subject} for the heartbeat bound. */
        SILENT,
        /** {@code subject} closed its group while others still needed it. */
        LEFT,
        /** {@code origin} lost a connection to {@code subject} (EOF, reset): first-hand, but maybe a failure travelling. */
        CONNECTION,
        /** Ranks called different collectives at the same point. */
        MISMATCH,
        /** {@code origin}'s operation failed on its own (a deadline, an unexpected error). */
        FAILED
    }

    /** Longest text carried in a heartbeat (UTF-8 bytes). */
    static final int MAX_TEXT = 400;

    Reason {
        if (text == null) text = "";
        if (errorClass == null) errorClass = "";
        if (state == null) state = PeerUnresponsiveException.State.UNKNOWN;
    }

    static Reason silent(int origin, int subject, PeerUnresponsiveException.State state, long silenceMs) {
        return new Reason(Kind.SILENT, origin, subject, state, silenceMs, "", "");
    }

    static Reason left(int subject) {
        return new Reason(Kind.LEFT, subject, subject, null, 0, "", "");
    }

    static Reason mismatch(int origin, String text) {
        return new Reason(Kind.MISMATCH, origin, -1, null, 0, "", text);
    }

    /**
     * What {@code rank}'s own failure says: a lost connection to a named peer, or a failure of its own. Null for errors
     * that do not break the group (an unsupported operation, a configuration error): nothing to tell the others.
     */
    static Reason ofOwnFailure(int rank, DistributedException e) {
        if (e instanceof PeerLostException p) {
            if (p.peer().isPresent() && p.peer().getAsInt() != rank) {
                return new Reason(Kind.CONNECTION, rank, p.peer().getAsInt(), null, 0, "", clip(firstSentence(e.getMessage())));
            }
            return new Reason(Kind.FAILED, rank, -1, null, 0, e.getClass().getSimpleName(), clip(e.getMessage()));
        }
        if (e instanceof DeadlineExceededException) {
            return new Reason(Kind.FAILED, rank, -1, null, 0, e.getClass().getSimpleName(), clip(e.getMessage()));
        }
        return null;
    }

    /** Whether this is a cause in itself, not a failure that may have travelled from elsewhere. */
    boolean definitive() { return kind != Kind.CONNECTION; }

    /** Up to the first ". " (a backend's account of a lost connection, without its advice). */
    static String firstSentence(String s) {
        if (s == null) return "";
        int end = s.indexOf(". ");
        return end < 0 ? s : s.substring(0, end);
    }

    static String clip(String s) {
        if (s == null) return "";
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (b.length <= MAX_TEXT) return s;
        String cut = new String(b, 0, MAX_TEXT, java.nio.charset.StandardCharsets.UTF_8);
        return cut.substring(0, Math.max(0, cut.length() - 1)) + "…";
    }
}
