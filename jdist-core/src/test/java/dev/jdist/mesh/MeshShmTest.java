package dev.jdist.mesh;

import dev.jdist.shm.ShmFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A mesh pair's shared-memory file: sizes, the offer, what the acceptor checks, and that the file is gone once mapped. */
@Timeout(30)
class MeshShmTest {

    private static byte[] bytes(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.get(a);
        return a;
    }

    @Test
    void linksShrinkWithTheMeshSoOneMemberMapsAtMost16MiB() {
        assertThat(MeshShm.capacity(1 << 20, 2)).isEqualTo(1 << 20);
        assertThat(MeshShm.capacity(3 << 20, 2)).isEqualTo(2 << 20);
        assertThat(MeshShm.capacity(1 << 20, 16)).isEqualTo(512 << 10);
        assertThat(MeshShm.capacity(4096, 64)).isEqualTo(4096);
        assertThat(MeshShm.capacity(1 << 20, 1024)).isEqualTo(MeshShm.MIN_CAPACITY);
        for (int n = 2; n <= 64; n++) {
            long c = MeshShm.capacity(8 << 20, n);
            assertThat(Long.bitCount(c)).isOne();
            if (c > MeshShm.MIN_CAPACITY) assertThat((n - 1) * (MeshShm.fileBytes(c) - MeshShm.FILE_HEADER)).isLessThanOrEqualTo(16 << 20);
        }
    }

    @Test
    void theAcceptorMapsTheOfferedFileAndDeletesItAndTheTwoSidesShareTheirLinks() throws IOException {
        try (Arena a = Arena.ofShared()) {
            MeshShm.Created c = MeshShm.create(4096, 2, 5, 42L, a);
            try {
                byte[] offer = bytes(MeshShm.offer(c, null));
                assertThat(offer).hasSize(MeshShm.OFFER);
                assertThat(MeshShm.offersFile(offer)).isTrue();
                assertThat(MeshShm.offerText(offer)).isEqualTo(c.path().toString()).contains(MeshShm.FILE_PREFIX);
                MeshShm.Links acceptor = MeshShm.open(offer, 2, 5, 42L, a);
                assertThat(Files.exists(c.path())).as("deleted once the acceptor mapped it").isFalse();
                MeshShm.Links connector = MeshShm.links(c.map(), c.capacity(), true);
                MemorySegment src = a.allocate(10);
                src.set(ValueLayout.JAVA_BYTE, 9, (byte) 7);
                connector.out().write(src, 0, 10);
                MemorySegment dst = a.allocate(10);
                assertThat(acceptor.in().readable(10)).isEqualTo(10);
                acceptor.in().read(dst, 0, 10);
                assertThat(dst.get(ValueLayout.JAVA_BYTE, 9)).isEqualTo((byte) 7);
                acceptor.out().write(src, 0, 3);
                assertThat(connector.in().readable(1)).isEqualTo(3);
            } finally {
                ShmFiles.deleteQuietly(c.path());
            }
        }
    }

    @Test
    void anOfferForAnotherPairOrGroupOrAMissingFileIsRefused() throws IOException {
        try (Arena a = Arena.ofShared()) {
            MeshShm.Created c = MeshShm.create(4096, 0, 1, 42L, a);
            try {
                byte[] offer = bytes(MeshShm.offer(c, null));
                assertThatThrownBy(() -> MeshShm.open(offer, 0, 2, 42L, a)).isInstanceOf(IOException.class)
                        .hasMessageContaining("does not describe the links of ranks 0 and 2");
                byte[] again = bytes(MeshShm.offer(MeshShm.create(4096, 0, 1, 42L, a), null));
                assertThatThrownBy(() -> MeshShm.open(again, 0, 1, 43L, a)).isInstanceOf(IOException.class)
                        .hasMessageContaining("of this group");
                // the first refusal deleted the file too: a second look finds nothing
                assertThatThrownBy(() -> MeshShm.open(offer, 0, 1, 42L, a)).isInstanceOf(IOException.class)
                        .hasMessageContaining("no such file here");
            } finally {
                ShmFiles.deleteQuietly(c.path());
            }
            byte[] none = bytes(MeshShm.offer(null, "cannot create: No space left on device"));
            assertThat(MeshShm.offersFile(none)).isFalse();
            assertThat(MeshShm.offerText(none)).isEqualTo("cannot create: No space left on device");
        }
    }
}
