package dev.jdist.launch;

import java.util.ArrayList;
import java.util.List;

/** POSIX shell quoting (every word single-quoted unless it is plainly safe) and splitting (for --mpi-arg). */
public final class ShellQuote {
    private ShellQuote() {
    }

    /** One word, quoted so any POSIX shell (sh, dash, bash, zsh) passes it verbatim. */
    public static String quote(String s) {
        if (!s.isEmpty() && s.chars().allMatch(c -> Character.isLetterOrDigit(c) && c < 128 || "@%+=:,./_-".indexOf(c) >= 0)) {
            return s;
        }
        return "'" + s.replace("'", "'\\''") + "'";
    }

    public static String join(List<String> words) {
        List<String> q = new ArrayList<>();
        for (String w : words) {
            q.add(quote(w));
        }
        return String.join(" ", q);
    }

    /**
     * Splits {@code s} into words with POSIX shell rules (whitespace separates; single quotes literal; double quotes
     * with backslash escaping {@code \ " $ `} and newline; backslash escapes outside quotes; no expansion).
     *
     * @throws IllegalArgumentException for an unterminated quote
     */
    public static List<String> split(String s) {
        List<String> words = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean inWord = false;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == ' ' || c == '\t' || c == '\n') {
                if (inWord) {
                    words.add(cur.toString());
                    cur.setLength(0);
                    inWord = false;
                }
                i++;
            } else if (c == '\'') {
                int end = s.indexOf('\'', i + 1);
                if (end < 0) {
                    throw new IllegalArgumentException("unterminated single quote");
                }
                cur.append(s, i + 1, end);
                inWord = true;
                i = end + 1;
            } else if (c == '"') {
                inWord = true;
                i++;
                boolean closed = false;
                while (i < s.length()) {
                    char d = s.charAt(i);
                    if (d == '"') {
                        closed = true;
                        i++;
                        break;
                    }
                    if (d == '\\' && i + 1 < s.length() && "\\\"$`\n".indexOf(s.charAt(i + 1)) >= 0) {
                        if (s.charAt(i + 1) != '\n') {
                            cur.append(s.charAt(i + 1));
                        }
                        i += 2;
                        continue;
                    }
                    cur.append(d);
                    i++;
                }
                if (!closed) {
                    throw new IllegalArgumentException("unterminated double quote");
                }
            } else if (c == '\\') {
                if (i + 1 < s.length()) {
                    if (s.charAt(i + 1) != '\n') {
                        cur.append(s.charAt(i + 1));
                        inWord = true;
                    }
                    i += 2;
                } else {
                    i++; // a trailing backslash is dropped
                }
            } else {
                cur.append(c);
                inWord = true;
                i++;
            }
        }
        if (inWord) {
            words.add(cur.toString());
        }
        return words;
    }
}
