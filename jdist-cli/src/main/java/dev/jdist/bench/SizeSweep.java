package dev.jdist.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Message sizes of a sweep: {@code MIN:MAX} multiplied by a factor, as nccl-tests' {@code -b/-e/-f}. */
public final class SizeSweep {
    private static final Pattern SIZE = Pattern.compile("(?i)\\s*(\\d+)\\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?\\s*");

    private SizeSweep() {}

    /** Parses {@code 4B}, {@code 64KiB}, {@code 1M}, {@code 2GiB} (K/M/G are binary, as in nccl-tests). */
    public static long parseSize(String text) {
        Matcher m = SIZE.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("bad size '" + text + "': use a number with an optional unit B, KiB, MiB or GiB (e.g. 4B, 64KiB, 256MiB)");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "b" : m.group(2).toLowerCase(Locale.ROOT);
        long scale = switch (unit.charAt(0)) {
            case 'k' -> 1L << 10;
            case 'm' -> 1L << 20;
            case 'g' -> 1L << 30;
            default -> 1;
        };
        return Math.multiplyExact(n, scale);
    }

    /** Sizes from {@code MIN:MAX} (or a single size), each the previous times {@code factor}, MAX included. */
    public static List<Long> parse(String range, int factor) {
        if (factor < 2) throw new IllegalArgumentException("--factor must be at least 2, got " + factor);
        String[] parts = range.split(":", -1);
        if (parts.length > 2) throw new IllegalArgumentException("bad size range '" + range + "': use MIN:MAX, e.g. 4B:256MiB");
        long min = parseSize(parts[0]);
        long max = parts.length == 2 ? parseSize(parts[1]) : min;
        if (min <= 0 || max < min) {
            throw new IllegalArgumentException("bad size range '" + range + "': need 0 < MIN <= MAX");
        }
        List<Long> sizes = new ArrayList<>();
        for (long s = min; s <= max && sizes.size() < 64; s = Math.multiplyExact(s, (long) factor)) {
            sizes.add(s);
            if (s > Long.MAX_VALUE / factor) break;
        }
        if (sizes.getLast() != max) sizes.add(max);
        return sizes;
    }

    /** Human form of a byte count: 4B, 64KiB, 1MiB. */
    public static String format(long bytes) {
        if (bytes >= (1L << 30) && bytes % (1L << 30) == 0) return bytes / (1L << 30) + "GiB";
        if (bytes >= (1L << 20) && bytes % (1L << 20) == 0) return bytes / (1L << 20) + "MiB";
        if (bytes >= (1L << 10) && bytes % (1L << 10) == 0) return bytes / (1L << 10) + "KiB";
        return bytes + "B";
    }
}
