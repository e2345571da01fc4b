package dev.jdist.fuzz;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.net.spi.InetAddressResolver;
import java.net.spi.InetAddressResolverProvider;
import java.util.stream.Stream;

/**
 * The test JVMs' host-name resolver: the system's own, except while {@link #offline} is set (by the
 * configuration fuzzer), when {@code localhost} is 127.0.0.1 and every other name fails at once. So
 * fuzzed hostfiles never reach a DNS server. Address literals never get here (InetAddress parses them).
 */
public final class OfflineResolverProvider extends InetAddressResolverProvider {

    /** While true, no name lookup leaves the process. */
    public static volatile boolean offline;

    private static final byte[] LOOPBACK = {127, 0, 0, 1};

    @Override
    public InetAddressResolver get(Configuration configuration) {
        InetAddressResolver system = configuration.builtinResolver();
        return new InetAddressResolver() {
            @Override
            public Stream<InetAddress> lookupByName(String host, LookupPolicy policy) throws UnknownHostException {
                if (!offline) return system.lookupByName(host, policy);
                if ("localhost".equalsIgnoreCase(host)) return Stream.of(InetAddress.getByAddress(host, LOOPBACK));
                throw new UnknownHostException(host + " (name lookups are off while fuzzing)");
            }

            @Override
            public String lookupByAddress(byte[] addr) throws UnknownHostException {
                if (!offline) return system.lookupByAddress(addr);
                throw new UnknownHostException("reverse lookups are off while fuzzing");
            }
        };
    }

    @Override
    public String name() { return "jdist-test-offline-while-fuzzing"; }
}
