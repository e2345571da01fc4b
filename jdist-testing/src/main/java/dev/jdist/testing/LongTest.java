package dev.jdist.testing;

import org.junit.jupiter.api.Tag;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Puts a test class or method in the long tier: it runs under {@code bin/test --long} (and in CI, which runs both tiers),
 * not under the plain {@code bin/test} a contributor runs after every change. For soaks, chaos loops, timing sweeps and
 * tests that wait out a real default deadline for its own sake (docs/architecture.md, "Tests"). A test that checks
 * behaviour belongs in the default tier: shorten its deadlines through the documented knobs instead.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(LongTest.TAG)
public @interface LongTest {
    /** The JUnit tag; the build's surefire and failsafe settings select or exclude it (the root pom, {@code jdist.test.*}). */
    String TAG = "long";
}
