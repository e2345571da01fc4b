package dev.jdist.launch;

import dev.jdist.console.ConsoleLog;
import dev.jdist.hosts.HostEntry;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code --max-restarts} and {@code --max-failures-per-host} decisions (docs/reference/launcher.md §8.7), without processes. */
class LauncherRestartsTest {
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final ConsoleLog log = new ConsoleLog(new PrintStream(err, true, StandardCharsets.UTF_8), false);

    private static HostEntry host(String name, String ip) {
        return new HostEntry(name, List.of(ip));
    }

    private static Launcher.Round failedOn(HostEntry h, int rank, int code) {
        return new Launcher.Round(code, false, new JobSupervisor.Failure(rank, h, code));
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aHostThatFailedMTimesGivesItsRanksToTheOtherHostsInTurn() {
        HostEntry a = host("a", "10.0.0.1"), b = host("b", "10.0.0.2"), c = host("c", "10.0.0.3");
        List<HostEntry> hosts = List.of(a, a, b, b, c, c);
        Launcher.Restarts r = new Launcher.Restarts(5, 2, log);
        assertThat(r.restartAfter(failedOn(b, 2, 1), 0, hosts)).isTrue();
        assertThat(r.hostsFor(hosts)).isEqualTo(hosts);
        assertThat(r.restartAfter(failedOn(b, 3, 137), 1, hosts)).isTrue();
        assertThat(r.hostsFor(hosts)).containsExactly(a, a, a, c, c, c);
        assertThat(err()).contains("[WARN] host b failed 2 times (--max-failures-per-host 2): its ranks move to a, c from the next start")
                .contains("[WARN] restart 2 of at most 5: rank 3 on b exited with code 137 (SIGKILL)");
    }

    @Test
    void theLastRestartThatFailsEndsTheJobNamingEveryStartsFailure() {
        HostEntry a = host("a", "10.0.0.1");
        Launcher.Restarts r = new Launcher.Restarts(1, null, log);
        assertThat(r.restartAfter(failedOn(a, 0, 3), 0, List.of(a))).isTrue();
        assertThat(r.restartAfter(failedOn(a, 0, 4), 1, List.of(a))).isFalse();
        assertThat(err()).contains("[ERROR] job failed after 1 restart, all that --max-restarts 1 allows; "
                + "start 0: rank 0 on a exited with code 3; start 1: rank 0 on a exited with code 4");
        assertThat(r.finish(4, 1, false)).isEqualTo(4);
    }

    @Test
    void withoutMaxRestartsNothingRestartsAndNothingMoreIsPrinted() {
        HostEntry a = host("a", "10.0.0.1");
        Launcher.Restarts r = new Launcher.Restarts(0, null, log);
        assertThat(r.enabled()).isFalse();
        assertThat(r.restartAfter(failedOn(a, 0, 3), 0, List.of(a))).isFalse();
        assertThat(r.finish(3, 0, false)).isEqualTo(3);
        assertThat(err()).isEmpty();
    }

    @Test
    void aSuccessAfterRestartsSaysHowManyAndWhy() {
        HostEntry a = host("a", "10.0.0.1");
        Launcher.Restarts r = new Launcher.Restarts(3, null, log);
        r.restartAfter(failedOn(a, 1, 143), 0, List.of(a, a));
        assertThat(r.finish(0, 1, true)).isZero();
        assertThat(err()).contains("[WARN] job completed after 1 restart (--max-restarts 3); start 0: rank 1 on a exited with code 143 (SIGTERM)");
    }

    @Test
    void aStartEndedByTheLauncherAfterRestartsSaysHowManyThereWere() {
        HostEntry a = host("a", "10.0.0.1");
        Launcher.Restarts r = new Launcher.Restarts(3, null, log);
        r.restartAfter(failedOn(a, 0, 1), 0, List.of(a));
        assertThat(r.finish(130, 1, true)).isEqualTo(130);
        assertThat(err()).contains("[ERROR] job ended with status 130 after 1 restart (--max-restarts 3); start 0: rank 0 on a exited with code 1");
    }
}
