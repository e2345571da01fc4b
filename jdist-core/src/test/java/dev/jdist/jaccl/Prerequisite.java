package dev.jdist.jaccl;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/** Skips a test whose system prerequisite is missing — except under {@code CI=true}, where the skip is a failure. */
final class Prerequisite {
    private Prerequisite() {}

    static void require(boolean present, String whatIsMissing) {
        if (present) return;
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            Assertions.fail("CI=true but " + whatIsMissing);
        }
        Assumptions.abort(whatIsMissing);
    }
}
