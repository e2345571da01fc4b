/**
 * What every {@code jdist} command prints on stderr: the {@code [INFO]}/{@code [WARN]}/{@code [ERROR]} lines
 * ({@link dev.jdist.console.ConsoleLog}, with the lock all terminal output takes) and
 * {@link dev.jdist.console.CliFailure}, the one way any layer says "stop with this status after these lines".
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): nothing of jdist.
 */
package dev.jdist.console;
