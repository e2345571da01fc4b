package dev.jdist.launch;

import dev.jdist.console.CliFailure;

import java.util.regex.Pattern;

/** argparse's {@code int} and MLX's {@code positive_number} conversions, with their error messages (docs/reference/launcher.md §1.3). */
final class OptionValues {
    private static final Pattern INT = Pattern.compile("\\s*[+-]?[0-9]+\\s*");

    private OptionValues() {
    }

    static int positive(String name, String value) {
        if (INT.matcher(value).matches()) {
            try {
                int v = Integer.parseInt(value.trim());
                if (v >= 1) {
                    return v;
                }
            } catch (NumberFormatException ignored) {
                // too large: fall through
            }
        }
        throw CliFailure.usage("argument " + name + ": invalid positive_number value: '" + value
                + "' (give a whole number >= 1, e.g. -n 4)");
    }

    static int integer(String name, String value) {
        if (INT.matcher(value).matches()) {
            try {
                return Integer.parseInt(value.trim());
            } catch (NumberFormatException ignored) {
                // too large
            }
        }
        throw CliFailure.usage("argument " + name + ": invalid int value: '" + value + "' (give a whole number)");
    }
}
