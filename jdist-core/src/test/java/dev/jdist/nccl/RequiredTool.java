package dev.jdist.nccl;

import org.junit.jupiter.api.Assumptions;

import static org.assertj.core.api.Assertions.fail;

/** Skips a test when a system tool is missing, except under CI=true, where a missing tool is a failure. */
final class RequiredTool {

    private RequiredTool() {}

    static void require(boolean present, String what) {
        if (present) return;
        String msg = what + " is missing; install it (bin/test installs gcc and libc6-dev) to run this test";
        if ("true".equalsIgnoreCase(System.getenv("CI"))) fail("CI=true: " + msg);
        Assumptions.abort(msg);
    }
}
