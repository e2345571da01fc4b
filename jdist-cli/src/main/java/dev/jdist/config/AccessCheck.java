package dev.jdist.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The ssh and passwordless-sudo check of every host, concurrently (one worker per host, all started before any is
 * awaited): {@code ssh … H echo success}, then, if that worked, {@code ssh … H sudo ls}. At most
 * {@value #MAX_PARALLEL} ssh processes run at once, each call has a deadline, and the whole check has one too.
 */
public final class AccessCheck {
    static final int MAX_PARALLEL = 64;
    static final Duration CALL_DEADLINE = Duration.ofSeconds(30);

    /** The outcome for one host; {@code reason} is ssh's complaint when unreachable. */
    public record Access(String host, boolean reachable, boolean passwordlessSudo, String reason) {
    }

    private AccessCheck() {
    }

    public static List<Access> check(RemoteShell shell, List<String> hosts) {
        Semaphore slots = new Semaphore(MAX_PARALLEL);
        List<Future<Access>> futures = new ArrayList<>();
        try (ExecutorService workers = Executors.newVirtualThreadPerTaskExecutor()) {
            for (String host : hosts) {
                futures.add(workers.submit(() -> checkOne(shell, host, slots)));
            }
            List<Access> results = new ArrayList<>();
            long deadline = System.nanoTime() + CALL_DEADLINE.multipliedBy(2).plusSeconds(30).toNanos()
                    + TimeUnit.SECONDS.toNanos(hosts.size() / MAX_PARALLEL * 60L);
            for (int i = 0; i < hosts.size(); i++) {
                try {
                    results.add(futures.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
                } catch (TimeoutException e) {
                    futures.get(i).cancel(true);
                    results.add(new Access(hosts.get(i), false, false, "the ssh check did not finish in time"));
                } catch (ExecutionException e) {
                    results.add(new Access(hosts.get(i), false, false, String.valueOf(e.getCause())));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    results.add(new Access(hosts.get(i), false, false, "interrupted"));
                }
            }
            return results;
        }
    }

    private static Access checkOne(RemoteShell shell, String host, Semaphore slots) throws InterruptedException {
        slots.acquire();
        try {
            RemoteShell.Result echo = shell.run(host, List.of("echo", "success"), CALL_DEADLINE);
            if (!echo.ok()) {
                String reason = echo.timedOut() ? "ssh did not answer within " + CALL_DEADLINE.toSeconds() + " s"
                        : echo.reason().isEmpty() ? "ssh exited with status " + echo.exitCode() : echo.reason();
                return new Access(host, false, false, reason);
            }
            RemoteShell.Result sudo = shell.run(host, List.of("sudo", "ls"), CALL_DEADLINE);
            return new Access(host, true, sudo.ok(), "");
        } finally {
            slots.release();
        }
    }
}
