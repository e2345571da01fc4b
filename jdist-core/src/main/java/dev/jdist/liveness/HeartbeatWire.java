package dev.jdist.liveness;

import dev.jdist.OperationFingerprint;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.RankRecord;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The liveness watch's bytes (docs/reference/collectives.md §11.2): the 32-byte record each rank contributes to the
 * start-up all-gather, and the heartbeat datagram, big-endian, authenticated with HMAC-SHA256 (truncated to 16 bytes)
 * under a key derived from {@code JDIST_JOB_TOKEN} (or, without one, from the job's table).
 *
 * <pre>
 * record    "JDLR" | version u8 | flags u8 (bit 0 heartbeat on, bit 1 JDIST_DEBUG=detail) | 0 u16 | port u32
 *           | heartbeat ms u64 | incarnation u64 | 0 u32                                                     32 bytes
 * datagram  "JDLV" | version u8 | type u8 (1 beat, 2 leave) | flags u8 (bit 0 running, bit 1 last, bit 2 reason,
 *           bit 3 recent, bit 4 split) | 0 u8
 *           | rank u32 | incarnation u64 | sequence u64 | ms since the running/last operation changed u32
 *           | [running fingerprint (64)] | [last completed fingerprint (64)]
 *           | [recent collectives: count u8 (at most 8) | fingerprints (64 each)]
 *           | [split: count u8 | that many sections: group id i32 | ms since its running/last operation changed u32
 *              | flags u8 (bit 0 running, bit 1 last, bit 2 recent) | [running fingerprint (64)]
 *              | [last completed fingerprint (64)]
 *              | [recent collectives: count u8 (at most 8, fewer when the rest leaves no room) | fingerprints (64 each)]]
 *           | [reason: kind u8 | state u8 | origin u32 | subject i32 | silence ms u32 | class (u8 length + UTF-8)
 *              | text (u16 length + UTF-8, at most 400 bytes)]
 *           | HMAC-SHA256(key, everything before)[0..16)
 * </pre>
 */
final class HeartbeatWire {
    static final int RECORD_BYTES = 32;
    static final int BEAT = 1;
    static final int LEAVE = 2;
    /** Under the 1472 bytes of UDP payload a 1500-byte Ethernet frame carries: a heartbeat is never fragmented. */
    static final int MAX_DATAGRAM = 1450;
    private static final int RECORD_MAGIC = 0x4A444C52;   // "JDLR"
    private static final int MAGIC = 0x4A444C56;          // "JDLV"
    private static final int VERSION = 1;
    private static final int MAC_BYTES = 16;

    /** One rank's record from the start-up all-gather. */
    record Record(int port, long heartbeatMillis, boolean heartbeat, boolean detail, long incarnation) {}

    /**
     * A decoded datagram: the world group's activity, and that of the groups made by {@code split} it carries (most
     * urgent first; as many as fit).
     */
    record Beat(int type, int rank, long incarnation, long sequence, int sinceMs, OperationFingerprint running,
                OperationFingerprint last, java.util.List<OperationFingerprint> recent, java.util.List<SplitActivity> splits,
                Reason reason) {
        Beat {
            recent = recent == null ? java.util.List.of() : recent;
            splits = splits == null ? java.util.List.of() : splits;
        }
    }

    /**
     * What a rank does in one group made by {@code split}: the group's id (the hash of its label, the same on every
     * member), how long since its running or last operation changed, those operations and the group's last collectives
     * (numbered in that group).
     */
    record SplitActivity(int group, int sinceMs, OperationFingerprint running, OperationFingerprint last,
                         java.util.List<OperationFingerprint> recent) {
        SplitActivity {
            recent = recent == null ? java.util.List.of() : recent;
        }

        SplitActivity(int group, int sinceMs, OperationFingerprint running, OperationFingerprint last) {
            this(group, sinceMs, running, last, null);
        }

        /** Its bytes without the recent collectives: id, ms, flags, and the running and last fingerprints present. */
        int fixedBytes() {
            return 9 + (running != null ? OperationFingerprint.BYTES : 0) + (last != null ? OperationFingerprint.BYTES : 0);
        }
    }

    /** Fingerprints a datagram's recent-collectives lists carry at most, each. */
    static final int MAX_RECENT = 8;

    private final Mac mac;
    private final byte[] macOut = new byte[32];

    HeartbeatWire(byte[] key) {
        try {
            mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /**
     * The datagrams' key: HMAC-SHA256 under {@code token} of a fixed label; without a token, of a digest of the agreed
     * table (not a secret then: it keeps other jobs' datagrams apart, and {@code JDIST_JOB_TOKEN} authenticates).
     */
    static byte[] key(String token, JobTable table) {
        byte[] material;
        if (token != null && !token.isEmpty()) {
            material = token.getBytes(StandardCharsets.UTF_8);
        } else {
            StringBuilder sb = new StringBuilder("jdist job table\n");
            for (RankRecord r : table.ranks()) {
                sb.append(r.rank()).append(' ').append(r.host()).append(' ').append(r.pid()).append(' ').append(r.bootId())
                        .append(' ').append(r.ports()).append('\n');
            }
            try {
                material = MessageDigest.getInstance("SHA-256").digest(sb.toString().getBytes(StandardCharsets.UTF_8));
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("SHA-256 is not available in this JVM", e);
            }
        }
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(material, "HmacSHA256"));
            return m.doFinal("jdist liveness key v1".getBytes(StandardCharsets.US_ASCII));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    static byte[] record(int port, long heartbeatMillis, boolean heartbeat, boolean detail, long incarnation) {
        ByteBuffer b = ByteBuffer.allocate(RECORD_BYTES).order(ByteOrder.BIG_ENDIAN);
        b.putInt(RECORD_MAGIC).put((byte) VERSION).put((byte) ((heartbeat ? 1 : 0) | (detail ? 2 : 0))).putShort((short) 0)
                .putInt(port).putLong(heartbeatMillis).putLong(incarnation).putInt(0);
        return b.array();
    }

    /** Rank {@code q}'s record in the all-gathered bytes; null when it is not one (a rank that is not jdist's). */
    static Record readRecord(byte[] all, int q) {
        int off = q * RECORD_BYTES;
        if (all.length < off + RECORD_BYTES) return null;
        ByteBuffer b = ByteBuffer.wrap(all, off, RECORD_BYTES).slice().order(ByteOrder.BIG_ENDIAN);
        if (b.getInt(0) != RECORD_MAGIC || b.get(4) != VERSION) return null;
        int flags = b.get(5);
        return new Record(b.getInt(8), b.getLong(12), (flags & 1) != 0, (flags & 2) != 0, b.getLong(20));
    }

    synchronized byte[] encode(Beat beat) {
        ByteBuffer b = ByteBuffer.allocate(MAX_DATAGRAM).order(ByteOrder.BIG_ENDIAN);
        int flags = (beat.running() != null ? 1 : 0) | (beat.last() != null ? 2 : 0) | (beat.reason() != null ? 4 : 0)
                | (beat.recent().isEmpty() ? 0 : 8) | (beat.splits().isEmpty() ? 0 : 16);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) beat.type()).put((byte) flags).put((byte) 0);
        b.putInt(beat.rank()).putLong(beat.incarnation()).putLong(beat.sequence()).putInt(beat.sinceMs());
        if (beat.running() != null) b.put(beat.running().encode());
        if (beat.last() != null) b.put(beat.last().encode());
        putRecent(b, beat.recent(), MAX_RECENT);
        Reason r = beat.reason();
        byte[] cls = r == null ? null : r.errorClass().getBytes(StandardCharsets.UTF_8);
        if (cls != null && cls.length > 64) cls = Arrays.copyOf(cls, 64);
        byte[] text = r == null ? null : Reason.clip(r.text()).getBytes(StandardCharsets.UTF_8);
        if (!beat.splits().isEmpty()) {
            int reasonBytes = r == null ? 0 : 15 + cls.length + 2 + text.length;
            putSplits(b, beat.splits(), (int) Math.floorMod(beat.sequence(), 255L), MAX_DATAGRAM - MAC_BYTES - b.position() - reasonBytes);
        }
        if (r != null) {
            b.put((byte) r.kind().ordinal()).put((byte) r.state().ordinal()).putInt(r.origin()).putInt(r.subject())
                    .putInt((int) Math.min(Integer.MAX_VALUE, r.silenceMs()));
            b.put((byte) cls.length).put(cls);
            b.putShort((short) text.length).put(text);
        }
        int len = b.position();
        mac.update(b.array(), 0, len);
        try {
            mac.doFinal(macOut, 0);
        } catch (javax.crypto.ShortBufferException e) {
            throw new IllegalStateException(e);
        }
        b.put(macOut, 0, MAC_BYTES);
        return Arrays.copyOf(b.array(), b.position());
    }

    /**
     * The split groups' sections in the {@code room} bytes the rest of the datagram leaves: in the given order, as many
     * as fit with their running and last operations, then their recent collectives while room is left (so a heartbeat
     * stays one datagram; a long reason can leave room for fewer), starting at the carried group {@code turn} modulo
     * their count: successive beats give each group its turn first, and receivers keep the last list of each. The
     * count is written even when it is 0: bit 4 says it is there.
     */
    private static void putSplits(ByteBuffer b, java.util.List<SplitActivity> splits, int turn, int room) {
        room -= 1;   // the count
        int carried = 0;
        while (carried < Math.min(255, splits.size()) && splits.get(carried).fixedBytes() <= room) {
            room -= splits.get(carried).fixedBytes();
            carried++;
        }
        int[] recent = new int[carried];
        for (int k = 0; k < carried; k++) {
            int i = (turn + k) % carried;
            int fit = room > 1 ? (room - 1) / OperationFingerprint.BYTES : 0;
            recent[i] = Math.min(Math.min(MAX_RECENT, fit), splits.get(i).recent().size());
            if (recent[i] > 0) room -= 1 + recent[i] * OperationFingerprint.BYTES;
        }
        b.put((byte) carried);
        for (int i = 0; i < carried; i++) {
            SplitActivity split = splits.get(i);
            b.putInt(split.group()).putInt(split.sinceMs())
                    .put((byte) ((split.running() != null ? 1 : 0) | (split.last() != null ? 2 : 0) | (recent[i] > 0 ? 4 : 0)));
            if (split.running() != null) b.put(split.running().encode());
            if (split.last() != null) b.put(split.last().encode());
            putRecent(b, split.recent(), recent[i]);
        }
    }

    /** A recent-collectives list: count u8, then at most {@code max} fingerprints (the newest); nothing when there are none to send. */
    private static void putRecent(ByteBuffer b, java.util.List<OperationFingerprint> recent, int max) {
        int count = Math.min(max, recent.size());
        if (count <= 0) return;
        java.util.List<OperationFingerprint> sent = recent;
        if (count < recent.size()) {
            sent = new java.util.ArrayList<>(recent);
            sent.sort(java.util.Comparator.comparingLong(OperationFingerprint::sequence).reversed());
        }
        b.put((byte) count);
        for (int i = 0; i < count; i++) b.put(sent.get(i).encode());
    }

    /** The datagram in {@code buf[0..len)}, or null when it is not one of this job's (bad magic, length or MAC). */
    synchronized Beat decode(byte[] buf, int len) {
        if (len < 28 + MAC_BYTES || len > buf.length) return null;
        mac.update(buf, 0, len - MAC_BYTES);
        try {
            mac.doFinal(macOut, 0);
        } catch (javax.crypto.ShortBufferException e) {
            throw new IllegalStateException(e);
        }
        if (!MessageDigest.isEqual(Arrays.copyOf(macOut, MAC_BYTES), Arrays.copyOfRange(buf, len - MAC_BYTES, len))) return null;
        ByteBuffer b = ByteBuffer.wrap(buf, 0, len - MAC_BYTES).order(ByteOrder.BIG_ENDIAN);
        try {
            if (b.getInt() != MAGIC || b.get() != VERSION) return null;
            int type = b.get();
            int flags = b.get();
            b.get();
            int rank = b.getInt();
            long incarnation = b.getLong();
            long sequence = b.getLong();
            int since = b.getInt();
            OperationFingerprint running = (flags & 1) != 0 ? fingerprint(buf, b) : null;
            OperationFingerprint last = (flags & 2) != 0 ? fingerprint(buf, b) : null;
            java.util.List<OperationFingerprint> recent = (flags & 8) != 0 ? recent(buf, b) : java.util.List.of();
            java.util.List<SplitActivity> splits = java.util.List.of();
            if ((flags & 16) != 0) {
                int count = b.get() & 0xFF;
                splits = new java.util.ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    int group = b.getInt();
                    int splitSince = b.getInt();
                    int splitFlags = b.get();
                    OperationFingerprint splitRunning = (splitFlags & 1) != 0 ? fingerprint(buf, b) : null;
                    OperationFingerprint splitLast = (splitFlags & 2) != 0 ? fingerprint(buf, b) : null;
                    java.util.List<OperationFingerprint> splitRecent = (splitFlags & 4) != 0 ? recent(buf, b) : java.util.List.of();
                    splits.add(new SplitActivity(group, splitSince, splitRunning, splitLast, splitRecent));
                }
            }
            Reason reason = null;
            if ((flags & 4) != 0) {
                Reason.Kind[] kinds = Reason.Kind.values();
                PeerUnresponsiveException.State[] states = PeerUnresponsiveException.State.values();
                int kind = b.get() & 0xFF;
                int state = b.get() & 0xFF;
                int origin = b.getInt();
                int subject = b.getInt();
                long silence = b.getInt() & 0xFFFFFFFFL;
                byte[] cls = new byte[b.get() & 0xFF];
                b.get(cls);
                byte[] text = new byte[b.getShort() & 0xFFFF];
                b.get(text);
                if (kind >= kinds.length || state >= states.length) return null;
                reason = new Reason(kinds[kind], origin, subject, states[state], silence, new String(cls, StandardCharsets.UTF_8),
                        new String(text, StandardCharsets.UTF_8));
            }
            if (type != BEAT && type != LEAVE) return null;
            return new Beat(type, rank, incarnation, sequence, since, running, last, recent, splits, reason);
        } catch (java.nio.BufferUnderflowException e) {
            return null;
        }
    }

    private static java.util.List<OperationFingerprint> recent(byte[] buf, ByteBuffer b) {
        int count = b.get() & 0xFF;
        java.util.List<OperationFingerprint> recent = new java.util.ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            OperationFingerprint f = fingerprint(buf, b);
            if (f != null) recent.add(f);
        }
        return recent;
    }

    private static OperationFingerprint fingerprint(byte[] buf, ByteBuffer b) {
        if (b.remaining() < OperationFingerprint.BYTES) throw new java.nio.BufferUnderflowException();
        OperationFingerprint f = OperationFingerprint.decode(buf, b.position());
        b.position(b.position() + OperationFingerprint.BYTES);
        return f;
    }
}
