package dev.jdist.cluster;

import dev.jdist.ConfigException;

import java.util.ArrayList;
import java.util.List;

/**
 * Slurm's host list syntax ({@code SLURM_JOB_NODELIST}), expanded in Slurm's order: {@code node[001-004,010]},
 * several comma-separated items ({@code a[1-2],b,c[7]}), several bracket groups in one name
 * ({@code rack[1-2]-node[01-02]} gives rack1-node01, rack1-node02, rack2-node01, rack2-node02: the last group
 * varies fastest), zero padding kept from the range's lower bound ({@code [08-10]} gives 08, 09, 10).
 * Pure: no name is resolved here.
 */
public final class Hostlist {

    /** The most hosts one list may expand to (a typo such as {@code [1-99999999]} is an error, not an OutOfMemoryError). */
    public static final int MAX_HOSTS = 1 << 20;

    private Hostlist() {}

    /** The hosts of {@code list}, in order; {@code variable} names the list in errors. */
    public static List<String> expand(String variable, String list) {
        if (list == null || list.isBlank()) {
            throw bad(variable, list, "it is empty");
        }
        List<String> hosts = new ArrayList<>();
        for (String item : splitOutsideBrackets(variable, list)) {
            if (item.isEmpty()) throw bad(variable, list, "it has an empty item (two commas in a row, or a comma at an end)");
            expandItem(variable, list, item, hosts);
        }
        return List.copyOf(hosts);
    }

    /** The first host of {@code list}, without expanding the rest. */
    public static String first(String variable, String list) {
        if (list == null || list.isBlank()) throw bad(variable, list, "it is empty");
        List<String> items = splitOutsideBrackets(variable, list);
        if (items.getFirst().isEmpty()) throw bad(variable, list, "it starts with a comma");
        List<String> one = new ArrayList<>();
        expandItem(variable, list, items.getFirst(), one);
        expand(variable, list);   // validates the whole list, so a typo later in it is reported now
        return one.getFirst();
    }

    private static List<String> splitOutsideBrackets(String variable, String list) {
        List<String> items = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < list.length(); i++) {
            char c = list.charAt(i);
            if (c == '[') {
                if (depth > 0) throw bad(variable, list, "a '[' opens inside another bracket at position " + i);
                depth++;
            } else if (c == ']') {
                if (depth == 0) throw bad(variable, list, "a ']' at position " + i + " closes no bracket");
                depth--;
            } else if (c == ',' && depth == 0) {
                items.add(list.substring(start, i).strip());
                start = i + 1;
            } else if (Character.isWhitespace(c)) {
                throw bad(variable, list, "it contains a space at position " + i);
            }
        }
        if (depth != 0) throw bad(variable, list, "a '[' is never closed");
        items.add(list.substring(start).strip());
        return items;
    }

    /** One item: literal text and bracket groups, the cartesian product in order (last group fastest). */
    private static void expandItem(String variable, String list, String item, List<String> out) {
        List<String> prefixes = new ArrayList<>(List.of(""));
        int i = 0;
        while (i < item.length()) {
            int open = item.indexOf('[', i);
            String literal = open < 0 ? item.substring(i) : item.substring(i, open);
            if (!literal.isEmpty()) {
                for (char c : literal.toCharArray()) {
                    if (!(Character.isLetterOrDigit(c) || c == '-' || c == '.' || c == '_')) {
                        throw bad(variable, list, "'" + c + "' in \"" + item + "\" is not a host name character");
                    }
                }
                prefixes.replaceAll(p -> p + literal);
            }
            if (open < 0) break;
            int close = item.indexOf(']', open);
            List<String> values = rangeValues(variable, list, item.substring(open + 1, close));
            if ((long) prefixes.size() * values.size() > MAX_HOSTS) {
                throw bad(variable, list, "it expands to more than " + MAX_HOSTS + " hosts");
            }
            List<String> next = new ArrayList<>(prefixes.size() * values.size());
            for (String p : prefixes) for (String v : values) next.add(p + v);
            prefixes = next;
            i = close + 1;
        }
        if (prefixes.getFirst().isEmpty()) throw bad(variable, list, "an item has no host name");
        if ((long) out.size() + prefixes.size() > MAX_HOSTS) {
            throw bad(variable, list, "it expands to more than " + MAX_HOSTS + " hosts");
        }
        out.addAll(prefixes);
    }

    /** {@code 001-004,010}: ranges and single numbers, padded to the lower bound's width. */
    private static List<String> rangeValues(String variable, String list, String inside) {
        if (inside.isEmpty()) throw bad(variable, list, "it has an empty bracket []");
        List<String> values = new ArrayList<>();
        for (String part : inside.split(",", -1)) {
            if (part.isEmpty()) throw bad(variable, list, "the bracket [" + inside + "] has an empty part");
            int dash = part.indexOf('-');
            String lo = dash < 0 ? part : part.substring(0, dash);
            String hi = dash < 0 ? part : part.substring(dash + 1);
            long a = number(variable, list, lo, inside);
            long b = number(variable, list, hi, inside);
            if (b < a) throw bad(variable, list, "the range " + part + " runs backwards");
            if (b - a + 1 + values.size() > MAX_HOSTS) throw bad(variable, list, "it expands to more than " + MAX_HOSTS + " hosts");
            int width = lo.length();
            for (long v = a; v <= b; v++) {
                String s = Long.toString(v);
                values.add(s.length() < width ? "0".repeat(width - s.length()) + s : s);
            }
        }
        return values;
    }

    private static long number(String variable, String list, String text, String inside) {
        if (text.isEmpty() || text.length() > 9 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw bad(variable, list, "\"" + text + "\" in [" + inside + "] is not a number (expected ranges such as [1-4,7] or [001-016])");
        }
        return Long.parseLong(text);
    }

    private static ConfigException bad(String variable, String list, String why) {
        return new ConfigException(variable + "=\"" + list + "\" is not a Slurm host list: " + why
                + "; expected names and ranges such as node[001-004,010],login1 (set JDIST_MASTER_ADDR to rank 0's host to "
                + "skip the host list)");
    }
}
