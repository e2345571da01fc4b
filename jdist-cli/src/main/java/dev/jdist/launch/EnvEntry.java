package dev.jdist.launch;

import java.util.regex.Pattern;

/** One {@code NAME=VALUE} entry of a rank's environment (split at the first '='; no '=' means an empty value). */
public record EnvEntry(String name, String value) {

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    public static EnvEntry parse(String entry) {
        int eq = entry.indexOf('=');
        return eq < 0 ? new EnvEntry(entry, "") : new EnvEntry(entry.substring(0, eq), entry.substring(eq + 1));
    }

    public static boolean isValidName(String name) {
        return NAME.matcher(name).matches();
    }

    public boolean isValid() {
        return isValidName(name);
    }

    @Override
    public String toString() {
        return name + "=" + value;
    }
}
