package dev.jdist.jaccl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * A rank process for {@link TcpSideChannelIT}: connects the side channel, runs the typed exchanges
 * and a barrier, and prints what it received. Arguments: rank size host port timeoutMillis.
 */
public final class SideChannelProgram {
    public static void main(String[] args) {
        int rank = Integer.parseInt(args[0]), size = Integer.parseInt(args[1]);
        try (TcpSideChannel ch = TcpSideChannel.connect(rank, size, args[2], Integer.parseInt(args[3]),
                Duration.ofMillis(Long.parseLong(args[4])), System.err::println)) {
            int[] ints = ch.allGatherInt(rank * 10 + 1);
            List<byte[]> mine = new ArrayList<>();
            for (int i = 0; i <= rank; i++) {
                byte[] rec = new byte[32];
                Arrays.fill(rec, (byte) (rank * 16 + i));
                mine.add(rec);
            }
            List<List<byte[]>> all = ch.allGatherRecords(mine, 32);
            StringBuilder recs = new StringBuilder();
            for (List<byte[]> theirs : all) {
                recs.append('[');
                for (byte[] r : theirs) recs.append(HexFormat.of().formatHex(r, 0, 1)).append(HexFormat.of().formatHex(r, 31, 32)).append(' ');
                recs.append(']');
            }
            ch.barrier();
            System.out.println("OK ints=" + Arrays.toString(ints) + " records=" + recs);
        } catch (RuntimeException e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            System.exit(3);
        }
    }
}
