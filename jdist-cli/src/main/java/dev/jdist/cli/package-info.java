/**
 * The {@code jdist} command: one picocli class per subcommand (launch, config, bench, doctor), the options they
 * declare, and {@link dev.jdist.cli.FailureHandler}, the one place where a failure becomes output and an exit status.
 * Subcommands call into {@code launch}, {@code config}, {@code bench} and {@code doctor}; nothing below imports this
 * package.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.algo, dev.jdist.flight, dev.jdist.console, dev.jdist.hosts, dev.jdist.launch, dev.jdist.config, dev.jdist.bench, dev.jdist.doctor.
 */
package dev.jdist.cli;
