package dev.jdist.launch;

import dev.jdist.mpi.MpiBackend;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class MpiAbortWatchTest {

    private static MpiAbortWatch pass(byte[] stderr, ByteArrayOutputStream to) {
        MpiAbortWatch w = new MpiAbortWatch(new ByteArrayInputStream(stderr), to);
        w.run();
        return w;
    }

    @Test
    void passesEveryByteOnUnchangedAndNoticesNothingWithoutTheNotice() {
        byte[] text = "line one\n\u00e9\u0000binary\r\nno newline at the end".getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream to = new ByteArrayOutputStream();
        MpiAbortWatch w = pass(text, to);
        assertThat(to.toByteArray()).isEqualTo(text);
        assertThat(w.noticed()).isFalse();
        assertThat(w.overdue(System.nanoTime() + 3_600_000_000_000L)).isFalse();
    }

    @Test
    void noticesARanksAbortNoticeEvenBehindMpirunsPrefix() {
        String text = "something\n[1,2]<stderr>:" + MpiBackend.ABORT_NOTICE + " (exit status 70) because of:\nmore\n";
        ByteArrayOutputStream to = new ByteArrayOutputStream();
        long before = System.nanoTime();
        MpiAbortWatch w = pass(text.getBytes(StandardCharsets.UTF_8), to);
        assertThat(to.toString(StandardCharsets.UTF_8)).isEqualTo(text);
        assertThat(w.noticed()).isTrue();
        assertThat(w.overdue(before)).isFalse();
        assertThat(w.overdue(System.nanoTime() + (MpiAbortWatch.MPIRUN_AFTER_ABORT_MILLIS + 1_000) * 1_000_000)).isTrue();
    }

    @Test
    void aNoticeInTheLastLineWithoutANewlineCountsAndOneSplitAcrossReadsToo() {
        assertThat(pass(MpiBackend.ABORT_NOTICE.getBytes(StandardCharsets.UTF_8), new ByteArrayOutputStream()).noticed()).isTrue();
        // a reader that hands the notice over one byte at a time
        byte[] notice = ("x\n" + MpiBackend.ABORT_NOTICE + "\n").getBytes(StandardCharsets.UTF_8);
        MpiAbortWatch w = new MpiAbortWatch(new ByteArrayInputStream(notice) {
            @Override
            public synchronized int read(byte[] b, int off, int len) {
                return super.read(b, off, Math.min(1, len));
            }
        }, new ByteArrayOutputStream());
        w.run();
        assertThat(w.noticed()).isTrue();
    }
}
