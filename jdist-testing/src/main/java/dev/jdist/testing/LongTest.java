package dev.jdist.testing;

import org.junit.jupiter.api.Tag;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Puts a test class or method in the long tier: it runs under {@code bin/test --long} (and in CI, which runs both tiers),
 * not under the plain {@code bin/test} a contributor runs after every change, which checks each behaviour once. For
 * tests that load the whole machine on purpose, multi-GiB transfers, builds of whole artifacts, network chaos that must
 * cause no false failure, timing sweeps, tests that must run alone, and the rest of a sweep whose representative cases
 * stay in the default tier (CONTRIBUTING.md, "Build and test"). A test that waits on a deadline belongs in the default
 * tier: shorten the deadline through the documented knobs instead.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(LongTest.TAG)
public @interface LongTest {
    /** The JUnit tag; the build's surefire and failsafe settings select or exclude it (the root pom, {@code jdist.test.*}). */
    String TAG = "long";
}
